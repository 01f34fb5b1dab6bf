package herald

/*
#include "hg.h"
*/
import "C"

import (
	"bytes"
	"sync/atomic"
	"unsafe"
)

// The events of one change are copied into Go memory at most twice, not
// once per watch: every watch after the second that receives the change
// (from any engine, by Poll, Events or Batches) is handed the second's
// key string and payload slice.
// A payload is therefore shared, read-only memory (as Object.Payload is
// once written).
//
// shared is one change's event as Go holds it: the C view it was copied
// from (the engine's item: its address, length and version) and the copy.
type shared struct {
	rv      uint64
	kp, pp  uintptr
	kl, pl  int
	key     string
	payload []byte
}

// sharedCache holds the copies of the last changes seen, direct-mapped
// by resource version (consecutive changes: consecutive slots). A hit
// needs the same version, the same C addresses and lengths, and the same
// bytes (compared: an address may be reused by a later item, or by
// another engine's item at the same version), so a hit is always the
// very bytes the view shows. Payloads above sharedMaxPayload are not kept
// (the cache holds at most sharedSlots * sharedMaxPayload bytes alive).
const (
	sharedSlots      = 512
	sharedMaxPayload = 16 << 10
)

var sharedCache [sharedSlots]atomic.Pointer[shared]

// sharedSeen is the version last copied in each slot. A change is cached
// the second time it is copied, not the first: one seen by a single
// watch (a selective watch's change) costs one allocation and no cached
// entry (a pointer store, with its write barrier, and 80 bytes of
// garbage). In the node case of bench/ this was a third of sharedOf.
var sharedSeen [sharedSlots]atomic.Uint64

// sharedOf returns the Go copy of an event's key and payload: a cached
// one when it is the same bytes, else a new copy (cached if small).
func sharedOf(ev *C.herald_event) (string, []byte) {
	kl, pl := int(ev.key.len), int(ev.payload.len)
	if kl == 0 && pl == 0 {
		return "", nil
	}
	kp, pp := uintptr(unsafe.Pointer(ev.key.ptr)), uintptr(unsafe.Pointer(ev.payload.ptr))
	rv := uint64(ev.resource_version)
	var kb, pb []byte
	if kl > 0 {
		kb = unsafe.Slice((*byte)(unsafe.Pointer(ev.key.ptr)), kl)
	}
	if pl > 0 {
		pb = unsafe.Slice((*byte)(unsafe.Pointer(ev.payload.ptr)), pl)
	}
	slot := &sharedCache[rv%sharedSlots]
	if s := slot.Load(); s != nil && s.rv == rv && s.kp == kp && s.pp == pp && s.kl == kl && s.pl == pl &&
		s.key == unsafe.String(unsafe.SliceData(kb), kl) && bytes.Equal(s.payload, pb) {
		return s.key, s.payload
	}
	// One allocation: the key, then the payload (capacity-capped, so an
	// append by a reader cannot reach another event's bytes).
	buf := make([]byte, kl+pl)
	copy(buf, kb)
	copy(buf[kl:], pb)
	var key string
	var payload []byte
	if kl > 0 {
		key = unsafe.String(&buf[0], kl)
	}
	if pl > 0 {
		payload = buf[kl : kl+pl : kl+pl]
	}
	if pl <= sharedMaxPayload {
		if seen := &sharedSeen[rv%sharedSlots]; seen.Load() != rv {
			seen.Store(rv) // the first copy of this change: not kept
		} else {
			slot.Store(&shared{rv: rv, kp: kp, pp: pp, kl: kl, pl: pl, key: key, payload: payload})
		}
	}
	return key, payload
}
