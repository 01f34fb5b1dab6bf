package herald

/*
#include <stdlib.h>
#include "hg.h"
*/
import "C"

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"
)

// Scope is what a watch or a list covers.
type Scope int32

const (
	// ScopeAll: every key.
	ScopeAll Scope = 0
	// ScopePrefix: the keys under a prefix (a namespace): "prefix/...".
	ScopePrefix Scope = 1
	// ScopeKey: one key ("namespace/name").
	ScopeKey Scope = 2
)

// WatchRequest is what to watch, as Kubernetes' WATCH.
type WatchRequest struct {
	Scope Scope
	// ScopeValue is the prefix (ScopePrefix) or the key (ScopeKey).
	ScopeValue string
	// LabelSelector is a Kubernetes label selector ("app in (web,api)").
	LabelSelector string
	// FieldSelector is a Kubernetes field selector ("spec.nodeName=n1").
	FieldSelector string
	// ResourceVersion is where to start (unset: now, with the current
	// state as initial events).
	ResourceVersion Version
	// Match: MatchNotOlderThan is needed by SendInitialEvents.
	Match Match
	// AllowBookmarks: bookmarks are sent.
	AllowBookmarks bool
	// SendInitialEvents: nil unset; else sendInitialEvents=true/false.
	SendInitialEvents *bool
	// TimeoutMillis ends the watch with EndDeadline after this many
	// milliseconds; 0: never.
	TimeoutMillis uint64
}

// EventType is an event's kind.
type EventType int32

const (
	EventAdded    EventType = 0
	EventModified EventType = 1
	EventDeleted  EventType = 2
	EventBookmark EventType = 3
)

func (t EventType) String() string {
	switch t {
	case EventAdded:
		return "ADDED"
	case EventModified:
		return "MODIFIED"
	case EventDeleted:
		return "DELETED"
	case EventBookmark:
		return "BOOKMARK"
	}
	return fmt.Sprintf("EventType(%d)", int32(t))
}

// Event is one event of a watch, copied out of Herald into Go memory.
// Its Payload is shared, read-only: every watch that receives the same
// change gets the same slice (one copy per change, not per watch), as a
// channel of pointers would share it. Do not modify it; copy it first.
type Event struct {
	Type EventType
	// InitialEventsEnd marks the bookmark that ends the initial events.
	// (Next to Type: the struct is 56 bytes, not 64, and each delivery
	// copies it twice, into the channel and out.)
	InitialEventsEnd bool
	ResourceVersion  uint64
	// Key is "namespace/name" (empty for a bookmark).
	Key string
	// Payload is the object's payload (empty for a bookmark), shared
	// and read-only (see above).
	Payload []byte
}

// EndReason is why a watch ended.
type EndReason int32

const (
	EndNone                    EndReason = 0
	EndStopped                 EndReason = 1
	EndDeadline                EndReason = 2
	EndTooSlow                 EndReason = 3
	EndGone                    EndReason = 4
	EndRelisted                EndReason = 5
	EndEngineStopped           EndReason = 6
	EndTooLargeResourceVersion EndReason = 7
	EndEngineFailed            EndReason = 8
	EndDrained                 EndReason = 9
	endClosed                  EndReason = -1
)

func (r EndReason) String() string {
	switch r {
	case EndNone:
		return "none"
	case EndStopped:
		return "stopped"
	case EndDeadline:
		return "deadline"
	case EndTooSlow:
		return "too slow"
	case EndGone:
		return "gone"
	case EndRelisted:
		return "relisted"
	case EndEngineStopped:
		return "engine stopped"
	case EndTooLargeResourceVersion:
		return "too large resource version"
	case EndEngineFailed:
		return "engine failed"
	case EndDrained:
		return "drained"
	case endClosed:
		return "closed"
	}
	return fmt.Sprintf("EndReason(%d)", int32(r))
}

// End is a watch's end.
type End struct {
	Reason EndReason
	// Requested: Gone and TooLargeResourceVersion: the version asked for.
	Requested uint64
	// Bound: Gone: the oldest version it could have started from;
	// TooLargeResourceVersion: the cache's version.
	Bound uint64
	// Cause: the context's error when the watch's or Events' context
	// ended it (Reason is then EndStopped); ErrHandle when Close ended
	// it.
	Cause error
}

func (e *End) String() string {
	s := e.Reason.String()
	if e.Requested != 0 || e.Bound != 0 {
		s += fmt.Sprintf(" (requested %d, bound %d)", e.Requested, e.Bound)
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Watch is one watch. Receive with Poll (non-blocking batches) or with
// Events (a channel fed by the binding's shared readiness loop), not
// both. Safe for concurrent use.
type Watch struct {
	c *watchCore
}

// watchCore is a watch's state, apart from the *Watch the user holds so
// that its finalizer can run while the dispatcher and the feeding
// goroutine hold the core.
type watchCore struct {
	h uint64

	mu        sync.Mutex
	freed     bool  // the C handle is freed
	end       *End  // the end, once seen
	cause     error // why the binding stopped it (ctx, Close)
	inSet     bool  // Events or Batches started: the dispatcher and feed own receiving
	credit    bool  // the feed waits for a batch: the dispatcher may poll
	batches   chan batch
	evbuf     []Event       // the Events path's batch (see pollLocked)
	out       chan Event    // Events' channel (nil for Batches)
	outB      chan []Event  // Batches' channel (nil for Events)
	kick      chan struct{} // the feed should poll now (a stop, a close)
	closed    chan struct{} // Close was called
	closeOnce sync.Once
	stopCtx   func() bool // the watch's context.AfterFunc
	onFull    bool        // on the dispatcher's full list (its loop only)
}

type batch struct {
	events []Event
	end    *End
	armed  bool // the poll armed the watch (pollLocked's arming)
}

// Watch opens a watch. When ctx is done the watch is stopped (its end:
// EndStopped with Cause ctx.Err()).
func (e *Engine) Watch(ctx context.Context, req WatchRequest) (*Watch, error) {
	rv, flags := versionFlags(req.ResourceVersion, req.Match)
	if req.AllowBookmarks {
		flags |= flagBookmarks
	}
	if req.SendInitialEvents != nil {
		if *req.SendInitialEvents {
			flags |= flagSendInitial
		} else {
			flags |= flagNoInitial
		}
	}
	sv, svl := cstr(req.ScopeValue)
	ls, lsl := cstr(req.LabelSelector)
	fs, fsl := cstr(req.FieldSelector)
	var h C.uint64_t
	r := C.hg_watch_open(C.uint64_t(e.h), C.int32_t(req.Scope), sv, svl, ls, lsl, fs, fsl,
		C.uint64_t(rv), C.uint32_t(flags), C.uint64_t(req.TimeoutMillis), &h)
	runtime.KeepAlive(req)
	if err := check("watch", r); err != nil {
		return nil, err
	}
	c := &watchCore{
		h:       uint64(h),
		batches: make(chan batch, 1),
		kick:    make(chan struct{}, 1),
		closed:  make(chan struct{}),
	}
	w := &Watch{c: c}
	runtime.SetFinalizer(w, func(w *Watch) { w.c.close() })
	if ctx != nil && ctx.Done() != nil {
		c.stopCtx = context.AfterFunc(ctx, func() { c.stopWith(context.Cause(ctx)) })
	}
	return w, nil
}

// stopWith stops the watch for the binding's reason (a context's end).
func (c *watchCore) stopWith(cause error) {
	c.mu.Lock()
	if c.cause == nil && c.end == nil {
		c.cause = cause
	}
	freed := c.freed
	c.mu.Unlock()
	if !freed {
		C.hg_watch_stop(C.uint64_t(c.h))
	}
	c.poke()
}

// poke makes the feed poll.
func (c *watchCore) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// ID is the watch's C handle (for logs).
func (w *Watch) ID() uint64 { return w.c.h }

// Stop stops the watch: its next receive reports EndStopped (unless it
// had ended). It does not wait; Events' channel closes after it.
func (w *Watch) Stop() error {
	c := w.c
	c.mu.Lock()
	freed := c.freed
	c.mu.Unlock()
	select {
	case <-c.closed:
		return closedError("stop", "watch")
	default:
	}
	if freed {
		return nil // it ended (Events frees it at its end)
	}
	err := check("stop", C.hg_watch_stop(C.uint64_t(c.h)))
	c.poke()
	return err
}

// Close stops the watch and frees it. An Events channel closes (End:
// EndStopped with Cause ErrHandle unless it had ended); later calls
// return ErrHandle. Closing twice is a no-op.
func (w *Watch) Close() error {
	runtime.SetFinalizer(w, nil)
	w.c.close()
	return nil
}

func (c *watchCore) close() {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		if c.cause == nil && c.end == nil {
			c.cause = closedError("close", "watch")
		}
		c.mu.Unlock()
		c.free() // sets the end before the feed closes the channel
		close(c.closed)
	})
}

// free frees the C handle once (its end, if not seen, is the close).
func (c *watchCore) free() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freed {
		return
	}
	c.freed = true
	if c.end == nil {
		c.end = &End{Reason: EndStopped, Cause: c.cause}
	}
	C.hg_watch_free(C.uint64_t(c.h))
	if c.stopCtx != nil {
		c.stopCtx() // the context no longer holds the watch
	}
	if c.inSet {
		theDispatcher.forget(c.h)
	}
}

// End is the watch's end, or nil while it runs.
func (w *Watch) End() *End { return w.c.End() }

func (c *watchCore) End() *End {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.end == nil {
		return nil
	}
	e := *c.end
	return &e
}

// Poll takes up to max ready events without blocking (max <= 0: a
// default batch). It returns the end once the watch has ended (then
// every later call returns it again, with no events). Not for a watch
// whose Events channel was taken (ErrInvalid).
func (w *Watch) Poll(max int) ([]Event, *End, error) {
	c := w.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inSet {
		return nil, nil, &Error{Code: ErrInvalid.Code, Op: "poll", Message: "the watch is consumed by Events"}
	}
	if c.freed {
		return nil, nil, closedError("poll", "watch")
	}
	if c.end != nil {
		e := *c.end
		return nil, &e, nil
	}
	b, err := c.pollLocked(max, false, false)
	if err != nil {
		return nil, nil, err
	}
	return b.events, b.end, nil
}

// pollLocked polls the C watch once (c.mu held) and copies what it got.
// reuse: the events go into c.evbuf, which the next poll overwrites (the
// Events path: the feed or the loop, whichever holds the credit, copies
// them into the channel before its next poll); else a new slice.
//
// arming: herald_watch_poll_arming, which arms the watch when the batch
// drains it (then b.armed: the set reports it again once it has more, and
// no second poll is needed); only the dispatcher, which holds the credit,
// uses it.
func (c *watchCore) pollLocked(max int, reuse, arming bool) (batch, error) {
	if max <= 0 {
		max = defaultPollBatch
	}
	if max > maxPollBatchLimit {
		max = maxPollBatchLimit
	}
	var buf *pollBuffer
	if arming {
		buf = loopBuffer // the loop's goroutine only
	} else {
		buf = pollBuffers.Get().(*pollBuffer)
		defer pollBuffers.Put(buf)
	}
	var r C.hg_res
	if arming {
		r = C.hg_watch_poll_arming(C.uint64_t(c.h), buf.events, C.size_t(max), buf.n, buf.end, buf.armed)
	} else {
		r = C.hg_watch_poll(C.uint64_t(c.h), buf.events, C.size_t(max), buf.n, buf.end)
	}
	if err := check("poll", r); err != nil {
		return batch{}, err
	}
	n := int(*buf.n)
	var b batch
	b.armed = arming && bool(*buf.armed)
	if n > 0 {
		// The keys and payloads are Go copies shared with every watch that
		// receives the same change (sharedOf: one copy per change).
		evs := unsafe.Slice(buf.events, n)
		if reuse {
			if cap(c.evbuf) < n {
				c.evbuf = make([]Event, n)
			}
			b.events = c.evbuf[:n]
		} else {
			b.events = batchSlice(n)
		}
		for i := range evs {
			ev := &evs[i]
			key, payload := sharedOf(ev)
			b.events[i] = Event{
				Type:             EventType(ev.kind),
				ResourceVersion:  uint64(ev.resource_version),
				Key:              key,
				Payload:          payload,
				InitialEventsEnd: ev.flags&eventInitialEnd != 0,
			}
		}
	}
	if buf.end.reason != 0 {
		e := &End{Reason: EndReason(buf.end.reason), Requested: uint64(buf.end.requested), Bound: uint64(buf.end.bound)}
		if e.Reason == EndStopped {
			e.Cause = c.cause
		}
		c.end = e
		cp := *e
		b.end = &cp
	}
	return b, nil
}

// pollBuffer is C memory for one poll: the views Herald writes are C
// pointers, read before the next call on the watch (c.mu held).
type pollBuffer struct {
	events *C.herald_event
	n      *C.size_t
	end    *C.herald_end
	armed  *C.bool
}

// loopBuffer is the dispatcher loop's own (its polls are the arming ones).
var loopBuffer = newPollBuffer()

var pollBuffers = sync.Pool{New: func() any { return newPollBuffer() }}

func newPollBuffer() *pollBuffer {
	return &pollBuffer{
		events: (*C.herald_event)(C.calloc(maxPollBatchLimit, C.size_t(unsafe.Sizeof(C.herald_event{})))),
		n:      (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0))))),
		end:    (*C.herald_end)(C.calloc(1, C.size_t(unsafe.Sizeof(C.herald_end{})))),
		armed:  (*C.bool)(C.calloc(1, C.size_t(unsafe.Sizeof(C.bool(false))))),
	}
}

// Events returns a channel of the watch's events, fed by the binding's
// readiness loop (one goroutine per process waits on a watch set's
// eventfd) and one goroutine of this watch that blocks on Go channels
// only. The channel closes at the watch's end (then End says why), when
// ctx is done (the watch is stopped: EndStopped, Cause ctx.Err()), or at
// Close. A consumer that does not read holds no one up: Herald keeps
// its events (and ends it EndTooSlow or EndGone if it falls too far
// behind). Later calls return the same channel. Use one of Poll, Events
// and Batches on a watch: Events after Batches returns a closed channel.
func (w *Watch) Events(ctx context.Context) <-chan Event {
	c := w.c
	c.mu.Lock()
	if c.out != nil || c.outB != nil {
		out := c.out
		c.mu.Unlock()
		if out == nil {
			out = make(chan Event)
			close(out)
		}
		return out
	}
	c.out = make(chan Event, defaultEventsCap)
	c.inSet = true
	c.mu.Unlock()
	c.start(ctx, w)
	return c.out
}

// Batches is Events with one channel message per poll: each message
// holds every event the binding polled for the watch in one go (1 to
// BatchMax events, in order; messages in order), instead of one message
// per event. The same machinery feeds it (the shared readiness loop
// polls the watch and sends the batch itself while the consumer keeps
// up), with the same order, end and context rules as Events: the channel
// closes after the last event, and End then says why.
//
// Each message is a new slice that the receiver owns: the binding never
// touches it again, so the receiver may keep it, reorder it or pass it
// to another goroutine. (Each event's Payload is still shared and
// read-only, as with Events.) A receiver done with a slice may give it
// back with ReleaseBatch, so that a later message reuses its memory
// instead of allocating. The channel holds up to BatchesCap
// messages. Later calls return the same channel. Use one of Poll, Events
// and Batches on a watch: Batches after Events returns a closed channel.
func (w *Watch) Batches(ctx context.Context) <-chan []Event {
	c := w.c
	c.mu.Lock()
	if c.out != nil || c.outB != nil {
		out := c.outB
		c.mu.Unlock()
		if out == nil {
			out = make(chan []Event)
			close(out)
		}
		return out
	}
	c.outB = make(chan []Event, BatchesCap)
	c.inSet = true
	c.mu.Unlock()
	c.start(ctx, w)
	return c.outB
}

const (
	// BatchMax is the most events in one Batches message.
	BatchMax = defaultPollBatch
	// BatchesCap is the capacity, in messages, of a Batches channel.
	BatchesCap = 8
)

// start joins the watch to the readiness loop and starts its feed (the
// channel, c.out or c.outB, was just made).
func (c *watchCore) start(ctx context.Context, w *Watch) {
	c.mu.Lock()
	c.inSet = true
	ended := c.end != nil || c.freed
	c.mu.Unlock()
	if ended {
		c.closeOut()
		return
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := theDispatcher.add(c); err != nil {
		c.mu.Lock()
		if c.end == nil {
			c.end = &End{Reason: EndEngineFailed, Cause: err}
		}
		c.mu.Unlock()
		c.closeOut()
		return
	}
	go c.feed(ctx, w)
}

// closeOut closes the consumer's channel (Events' or Batches').
func (c *watchCore) closeOut() {
	if c.outB != nil {
		close(c.outB)
	} else {
		close(c.out)
	}
}

// room is how many more messages the consumer's channel holds (events
// for Events, batches for Batches); c.mu held, or the feed.
func (c *watchCore) room() int {
	if c.outB != nil {
		return cap(c.outB) - len(c.outB)
	}
	return cap(c.out) - len(c.out)
}

// feed hands batches to the user's channel until the end, ctx or Close.
// It blocks on Go channels only: a batch from the dispatcher, the user's receive, a kick, ctx,
// Close. Between batches it polls its own watch (one non-blocking cgo
// call); when that finds nothing the watch is armed, credit is given, and
// the dispatcher polls it when the set reports it.
func (c *watchCore) feed(ctx context.Context, w *Watch) {
	// The feed keeps its Watch reachable: a consumer that holds only the
	// channel must not have the finalizer close it under its feet.
	defer runtime.KeepAlive(w)
	defer func() {
		// The dispatcher sends on c.out only with credit (under c.mu):
		// take it back before closing.
		c.mu.Lock()
		c.credit = false
		c.mu.Unlock()
		c.closeOut()
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			c.stopWith(context.Cause(ctx))
		}
	}
	for {
		// Poll once ourselves: the dispatcher only polls with credit.
		c.mu.Lock()
		if c.freed {
			c.mu.Unlock()
			return
		}
		// Batches: a new slice per message (the receiver owns it).
		b, err := c.pollLocked(defaultPollBatch, c.outB == nil, false)
		if err != nil {
			if c.end == nil {
				c.end = &End{Reason: EndEngineFailed, Cause: err}
			}
			c.mu.Unlock()
			c.free()
			return
		}
		if len(b.events) == 0 && b.end == nil {
			c.credit = true
			c.mu.Unlock()
			got := false
			select {
			case b = <-c.batches:
				got = true
			case <-c.kick:
			case <-ctx.Done():
				stop()
			case <-c.closed:
				return
			}
			if !got {
				// Take the credit back; a batch the dispatcher sent
				// before is in the channel (it sends under c.mu).
				c.mu.Lock()
				c.credit = false
				select {
				case b = <-c.batches:
					got = true
				default:
				}
				c.mu.Unlock()
				if !got {
					continue
				}
			}
		} else {
			c.mu.Unlock()
		}
		if c.outB != nil {
			if !c.sendBatch(ctx, b.events, stop) {
				return
			}
			if b.end != nil {
				c.free()
				return
			}
			continue
		}
		evs := b.events
		for _, ev := range b.events {
			if len(c.out) < cap(c.out) {
				// The feed is the only sender now: there is room.
				c.out <- ev
				continue
			}
			select {
			case c.out <- ev:
			case <-ctx.Done():
				stop()
				// Drop the rest: the consumer is gone.
				b.events = nil
			case <-c.closed:
				return
			}
			if b.events == nil {
				break
			}
		}
		clear(evs) // c.evbuf: it holds no keys or payloads once delivered
		if b.end != nil {
			c.free()
			return
		}
	}
}

// sendBatch is the feed's send of one Batches message (none if empty);
// false: Close was called.
func (c *watchCore) sendBatch(ctx context.Context, evs []Event, stop func()) bool {
	if len(evs) == 0 {
		return true
	}
	if len(c.outB) < cap(c.outB) {
		// The feed is the only sender now: there is room.
		c.outB <- evs
		return true
	}
	select {
	case c.outB <- evs:
	case <-ctx.Done():
		stop() // drop it: the consumer is gone
	case <-c.closed:
		return false
	}
	return true
}

// dispatcher is the process's readiness loop: one watch set, its eventfd
// in Go's netpoller, one goroutine.
type dispatcher struct {
	once    sync.Once
	err     error
	set     uint64
	file    *os.File
	mu      sync.Mutex
	watches map[uint64]*watchCore
	// full: watches whose channel the loop filled while they may hold
	// more; the loop keeps their credit (loop's goroutine only).
	full []*watchCore
}

var theDispatcher = &dispatcher{watches: map[uint64]*watchCore{}}

func (d *dispatcher) add(c *watchCore) error {
	d.once.Do(d.start)
	if d.err != nil {
		return d.err
	}
	d.mu.Lock()
	d.watches[c.h] = c
	d.mu.Unlock()
	if err := check("watch set add", C.hg_set_add(C.uint64_t(d.set), C.uint64_t(c.h))); err != nil {
		d.forget(c.h)
		return err
	}
	return nil
}

func (d *dispatcher) forget(h uint64) {
	d.mu.Lock()
	delete(d.watches, h)
	d.mu.Unlock()
}

// dispatch polls one watch the set reported, if its feed has credit.
// A watch whose channel it fills while the watch may hold more stays
// with the loop (it keeps the credit), on its full list: the loop comes
// back to it after each round of ready watches, and hands it to its
// feed only before it waits (see loop).
func (d *dispatcher) dispatch(h uint64) {
	d.mu.Lock()
	c := d.watches[h]
	d.mu.Unlock()
	if c == nil {
		return
	}
	if full, _ := c.deliver(); full && !c.onFull {
		c.onFull = true
		d.full = append(d.full, c)
	}
}

// deliver: with the credit (the feed waits for a batch), polls the watch
// and sends into its channel, polling no more than the channel has room
// for (only the holder of the credit sends, under c.mu, so the sends
// fit), until a batch drains the watch (it is armed again) or the
// channel is full. full: the channel is full and the watch may hold
// more; the caller keeps the credit. sent: events sent.
func (c *watchCore) deliver() (full bool, sent int) {
	c.mu.Lock()
	if !c.credit || c.freed {
		// The feed is busy; it polls when it is done.
		c.mu.Unlock()
		return false, 0
	}
	for {
		room := c.room()
		if room == 0 {
			c.mu.Unlock()
			return true, sent
		}
		max, reuse := room, true
		if c.outB != nil {
			// Batches: one message per poll, a new slice each.
			max, reuse = BatchMax, false
		}
		b, err := c.pollLocked(max, reuse, true)
		if err != nil || b.end != nil {
			// The feed reports it (it ends the watch).
			c.credit = false
			if err != nil {
				c.mu.Unlock()
				c.poke()
				return false, sent
			}
			c.batches <- b // room: one batch at a time, only with credit
			c.mu.Unlock()
			return false, sent
		}
		if len(b.events) == 0 {
			c.mu.Unlock() // armed again
			return false, sent
		}
		if c.outB != nil {
			c.outB <- b.events // the receiver's now
		} else {
			for _, ev := range b.events {
				c.out <- ev
			}
			clear(b.events) // c.evbuf: it holds no keys or payloads once delivered
		}
		sent += len(b.events)
		if b.armed {
			// Drained and armed in the same call: the set reports it
			// again once it has more (the credit stays).
			c.mu.Unlock()
			return false, sent
		}
	}
}

// refill delivers to the watches on the full list again (their consumers
// may have made room); those still full stay. It returns the events sent.
func (d *dispatcher) refill() int {
	sent, kept := 0, d.full[:0]
	for _, c := range d.full {
		full, n := c.deliver()
		sent += n
		if full {
			kept = append(kept, c)
		} else {
			c.onFull = false
		}
	}
	clear(d.full[len(kept):])
	d.full = kept
	return sent
}

// handOff gives the watches on the full list to their feeds, which wait
// for room (credit back to the feed), then poll.
func (d *dispatcher) handOff() {
	for _, c := range d.full {
		c.onFull = false
		c.mu.Lock()
		if c.credit && !c.freed {
			c.credit = false
			c.batches <- batch{} // room: one batch at a time, only with credit
		}
		c.mu.Unlock()
	}
	clear(d.full)
	d.full = d.full[:0]
}

// batchPool holds slices given back by ReleaseBatch, cleared, for later
// Batches messages of any watch.
var batchPool sync.Pool

// batchSlice is a slice of n events for a Batches message: a released
// one when the pool has one large enough, else a new one.
func batchSlice(n int) []Event {
	if p, ok := batchPool.Get().(*[]Event); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]Event, n)
}

// ReleaseBatch gives back a slice received from a Batches channel, once
// the receiver is done with it: a later message (of any watch) may reuse
// its memory instead of allocating, which keeps a busy consumer's garbage,
// and the collector's work, down. After the call neither the slice nor
// anything sliced from it may be used (the Key and Payload strings and
// slices copied out of its events stay valid: they are not in it).
// Releasing is optional; a slice not released is garbage as usual. A
// nil or empty slice is ignored. Release a slice once: one released
// twice may back two later messages at once.
func ReleaseBatch(b []Event) {
	if cap(b) == 0 {
		return
	}
	b = b[:cap(b)]
	clear(b) // it holds no keys or payloads while pooled
	batchPool.Put(&b)
}
