// Package herald is the Go binding of Herald, a watch cache (the job of
// the Kubernetes apiserver's): one Writer applies versioned changes; many
// watches with label and field selectors receive exactly the events they
// may see, in order, or an explicit end with a reason.
//
// It is cgo over Herald's C ABI (bindings/c). Every handle (Engine,
// Writer, Watch) is safe to use from many goroutines. See README.md for
// the threading model.
package herald

/*
#include <stdlib.h>
#include "hg.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"unsafe"
)

// Object is an object to write. Its key is Namespace/Name, or Name when
// Namespace is empty.
type Object struct {
	Namespace string
	Name      string
	// Labels, for label selectors.
	Labels map[string]string
	// Fields: the selectable fields ("spec.nodeName"), for field
	// selectors ("metadata.name" and "metadata.namespace" come with the
	// key).
	Fields map[string]string
	// Payload is kept as given (copied once) and handed to watchers.
	Payload []byte
}

// ChangeKind is the kind of a write.
type ChangeKind int32

const (
	Added    ChangeKind = 0
	Modified ChangeKind = 1
	// Deleted: the object given is its last state.
	Deleted ChangeKind = 2
)

// Version is an optional resource version: the zero Version is unset
// (Kubernetes' ""), At(n) is n (At(0): "0", any).
type Version struct {
	n   uint64
	set bool
}

// At is the resource version n.
func At(n uint64) Version { return Version{n: n, set: true} }

// Get returns the version and whether it is set.
func (v Version) Get() (uint64, bool) { return v.n, v.set }

// Match is Kubernetes' resourceVersionMatch.
type Match int

const (
	// MatchDefault: unset.
	MatchDefault Match = iota
	// MatchNotOlderThan: NotOlderThan.
	MatchNotOlderThan
	// MatchExact: Exact (lists and gets).
	MatchExact
)

const (
	flagHasRV         = 1
	flagBookmarks     = 2
	flagSendInitial   = 4
	flagNoInitial     = 8
	flagNotOlderThan  = 16
	flagExact         = 32
	eventInitialEnd   = 1
	statusPending     = 1
	defaultEventsCap  = 64
	defaultPollBatch  = 128
	maxPollBatchLimit = 4096
)

// HERALD_ENGINE_INLINE_DISPATCH (herald_engine_new_flags).
const engineInlineDispatch = 1

func versionFlags(v Version, m Match) (uint64, uint32) {
	var flags uint32
	if v.set {
		flags |= flagHasRV
	}
	switch m {
	case MatchNotOlderThan:
		flags |= flagNotOlderThan
	case MatchExact:
		flags |= flagExact
	}
	return v.n, flags
}

// Option configures NewEngine.
type Option func(*config)

type config struct {
	indexed        []string
	lower, upper   int
	inlineDispatch bool
}

// WithHistory bounds the history (the changes kept for watches from a
// past version): at least lower, at most upper changes; 0 is Herald's
// default for either.
func WithHistory(lower, upper int) Option {
	return func(c *config) { c.lower, c.upper = lower, upper }
}

// WithIndexedFields indexes watchers by these fields ("spec.nodeName"): a
// watcher whose field selector pins one is found by value, not scanned.
func WithIndexedFields(fields ...string) Option {
	return func(c *config) { c.indexed = append(c.indexed, fields...) }
}

// WithInlineDispatch sets whether the writer (Writer.Apply,
// Writer.ApplyBatch) fans each change out to the watches itself, on its
// own thread, when the engine's dispatcher thread is idle, waking that
// thread only when work remains (the engine's Config::inline_dispatch,
// the C ABI's HERALD_ENGINE_INLINE_DISPATCH). Off, each write wakes the
// dispatcher thread (a futex wake-up), which fans the change out. On,
// the writer pays the fan-out (a filter per candidate watch, a wake-up
// per sleeping one) but never waits for it: a change the dispatcher
// thread is busy with is left to it. The default is off: see README.md,
// Performance, for the measurements behind it.
func WithInlineDispatch(on bool) Option {
	return func(c *config) { c.inlineDispatch = on }
}

// Engine is Herald's cache, its readers and watchers. Safe for
// concurrent use.
type Engine struct {
	h    uint64
	once sync.Once
}

// Writer is an engine's one writer. Its calls are serialised (safe from
// many goroutines; one write at a time).
type Writer struct {
	h    uint64
	once sync.Once
}

// NewEngine creates an engine and its one writer.
func NewEngine(opts ...Option) (*Engine, *Writer, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.lower < 0 || cfg.upper < 0 {
		return nil, nil, &Error{Code: ErrInvalid.Code, Op: "new engine", Message: "negative history bound"}
	}
	var blob []byte
	lens := make([]uint64, 1, len(cfg.indexed)+1)
	lens = lens[:0]
	for _, f := range cfg.indexed {
		blob = append(blob, f...)
		lens = append(lens, uint64(len(f)))
	}
	blob = append(blob, 0)
	lens = append(lens, 0)
	var flags uint32
	if cfg.inlineDispatch {
		flags |= engineInlineDispatch
	}
	var e, w C.uint64_t
	r := C.hg_engine_new((*C.char)(unsafe.Pointer(&blob[0])), (*C.uint64_t)(unsafe.Pointer(&lens[0])),
		C.size_t(len(cfg.indexed)), C.size_t(cfg.lower), C.size_t(cfg.upper), C.uint32_t(flags), &e, &w)
	if err := check("new engine", r); err != nil {
		return nil, nil, err
	}
	eng := &Engine{h: uint64(e)}
	wr := &Writer{h: uint64(w)}
	runtime.SetFinalizer(eng, func(e *Engine) { e.Close() })
	runtime.SetFinalizer(wr, func(w *Writer) { w.Close() })
	return eng, wr, nil
}

// Stop stops the engine: its watches end with EndEngineStopped, writes
// fail with ErrStopped. The Engine stays open (Close frees it).
func (e *Engine) Stop() error {
	return check("stop", C.hg_engine_stop(C.uint64_t(e.h)))
}

// Close frees the engine's handle: later calls on it return ErrHandle.
// The engine runs on while its Writer or watches are open (Stop ends
// them). Closing twice returns ErrHandle.
func (e *Engine) Close() error {
	err := check("close engine", C.hg_engine_free(C.uint64_t(e.h)))
	e.once.Do(func() { runtime.SetFinalizer(e, nil) })
	return err
}

// ResourceVersion is the last version the engine applied.
func (e *Engine) ResourceVersion() (uint64, error) {
	var v C.uint64_t
	if err := check("resource version", C.hg_engine_rv(C.uint64_t(e.h), &v)); err != nil {
		return 0, err
	}
	return uint64(v), nil
}

// Stats are an engine's counters.
type Stats struct {
	ChangesReceived, Deliveries, WatchesStarted, WatchersActive, Relists uint64
}

// Stats reads the engine's counters.
func (e *Engine) Stats() (Stats, error) {
	var s C.herald_stats
	if err := check("stats", C.hg_engine_stats(C.uint64_t(e.h), &s)); err != nil {
		return Stats{}, err
	}
	return Stats{uint64(s.changes_received), uint64(s.deliveries), uint64(s.watches_started),
		uint64(s.watchers_active), uint64(s.relists)}, nil
}

// Apply applies one change at rv (above the engine's version).
func (w *Writer) Apply(kind ChangeKind, rv uint64, o Object) error {
	// Herald copies the object during the call: the encoding's buffers
	// are reused (no allocation per write once they have grown).
	enc := encoders.Get().(*encoded)
	enc.blob, enc.lens, enc.pairs = enc.blob[:0], enc.lens[:0], 0
	enc.add(&o)
	blob, lens := enc.ptrs()
	r := C.hg_apply(C.uint64_t(w.h), C.int32_t(kind), C.uint64_t(rv), blob, lens, C.size_t(enc.pairs))
	runtime.KeepAlive(enc)
	if cap(enc.blob) <= 1<<16 {
		encoders.Put(enc) // a large object's buffer is not kept
	}
	return check("apply", r)
}

var encoders = sync.Pool{New: func() any { return new(encoded) }}

// Change is one change of Writer.ApplyBatch: what Apply takes.
type Change struct {
	Kind            ChangeKind
	ResourceVersion uint64
	Object          Object
}

// ApplyBatch applies changes in order, as that many Apply calls would,
// in one cgo call, and Herald wakes its dispatcher once, after the last,
// not after each (for a source that receives changes in batches, as a
// reflector does from etcd). It stops at the first change refused: it
// returns how many were applied and that change's error. A malformed
// change (a bad kind) applies none.
func (w *Writer) ApplyBatch(changes []Change) (int, error) {
	if len(changes) == 0 {
		return 0, nil
	}
	b := batchEncoders.Get().(*batchEncoded)
	enc := &b.enc
	enc.blob, enc.lens, enc.pairs = enc.blob[:0], enc.lens[:0], 0
	b.kinds, b.rvs = b.kinds[:0], b.rvs[:0]
	for i := range changes {
		ch := &changes[i]
		enc.add(&ch.Object)
		b.kinds = append(b.kinds, C.int32_t(ch.Kind))
		b.rvs = append(b.rvs, C.uint64_t(ch.ResourceVersion))
	}
	blob, lens := enc.ptrs()
	var applied C.size_t
	r := C.hg_apply_batch(C.uint64_t(w.h), &b.kinds[0], &b.rvs[0], blob, lens,
		C.size_t(len(changes)), C.size_t(enc.pairs), &applied)
	runtime.KeepAlive(b)
	if cap(enc.blob) <= 1<<20 {
		batchEncoders.Put(b) // a large batch's buffers are not kept
	}
	return int(applied), check("apply batch", r)
}

type batchEncoded struct {
	enc   encoded
	kinds []C.int32_t
	rvs   []C.uint64_t
}

var batchEncoders = sync.Pool{New: func() any { return new(batchEncoded) }}

// Replace replaces the whole state with objects at rv (a list from the
// source): watches see the difference as events. The first Replace makes
// the engine ready.
func (w *Writer) Replace(objects []Object, rv uint64) error {
	var enc encoded
	for i := range objects {
		enc.add(&objects[i])
	}
	blob, lens := enc.ptrs()
	r := C.hg_replace(C.uint64_t(w.h), blob, lens, C.size_t(len(objects)), C.size_t(enc.pairs), C.uint64_t(rv))
	runtime.KeepAlive(enc.blob)
	runtime.KeepAlive(enc.lens)
	return check("replace", r)
}

// Progress says the source is at rv with nothing more for this engine
// (a progress notification): waiting reads and watches move on.
func (w *Writer) Progress(rv uint64) error {
	return check("progress", C.hg_progress(C.uint64_t(w.h), C.uint64_t(rv)))
}

// Close frees the writer (no more writes; the engine keeps what it has).
// Closing twice returns ErrHandle.
func (w *Writer) Close() error {
	err := check("close writer", C.hg_writer_free(C.uint64_t(w.h)))
	w.once.Do(func() { runtime.SetFinalizer(w, nil) })
	return err
}
