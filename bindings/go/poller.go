package herald

/*
#include <stdlib.h>
#include "hg.h"
*/
import "C"

import (
	"os"
	"runtime"
	"syscall"
	"unsafe"
)

// start creates the process's watch set and its goroutine. The set's
// eventfd (non-blocking) is dup'ed into an *os.File, so Go's netpoller
// waits on it: the goroutine parks in the runtime, not in a cgo call or a
// blocking syscall, and no OS thread is held while nothing is ready.
func (d *dispatcher) start() {
	var set C.uint64_t
	var fd C.int32_t
	if err := check("watch set", C.hg_set_new(&set, &fd)); err != nil {
		d.err = err
		return
	}
	d.set = uint64(set)
	dup, err := syscall.Dup(int(fd))
	if err != nil {
		d.err = &Error{Code: ErrSystem.Code, Op: "watch set", Message: "dup: " + err.Error()}
		return
	}
	syscall.CloseOnExec(dup)
	if err := syscall.SetNonblock(dup, true); err != nil {
		d.err = &Error{Code: ErrSystem.Code, Op: "watch set", Message: "nonblock: " + err.Error()}
		return
	}
	f := os.NewFile(uintptr(dup), "herald-watch-set")
	rc, err := f.SyscallConn()
	if err != nil {
		d.err = &Error{Code: ErrSystem.Code, Op: "watch set", Message: err.Error()}
		return
	}
	d.file = f // kept open for the process's life
	go d.loop(rc)
}

// loop: whenever the descriptor is readable, take the ready watches
// (until none remain: the netpoller is edge-triggered) and poll those
// whose feed waits for a batch.
func (d *dispatcher) loop(rc syscall.RawConn) {
	const max = 1024
	ready := (*C.uint64_t)(C.calloc(max, C.size_t(unsafe.Sizeof(C.uint64_t(0)))))
	n := (*C.size_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.size_t(0)))))
	hs := make([]uint64, 0, max)
	spins := 0
	for {
		err := rc.Read(func(uintptr) bool {
			for {
				if err := check("watch set ready", C.hg_set_ready(C.uint64_t(d.set), ready, max, n)); err != nil {
					panic(err) // the set is never freed: a bug
				}
				if *n == 0 {
					if len(d.full) == 0 {
						return false // wait until readable again
					}
					// Nothing new, but full channels: let their consumers
					// run, and refill them while they make room. When
					// they make none for a while, hand them to their
					// feeds (which block on the channel) and wait.
					if d.refill() > 0 {
						spins = 0
						continue
					}
					if spins < fullSpins {
						spins++
						runtime.Gosched()
						continue
					}
					spins = 0
					d.handOff()
					return false
				}
				hs = hs[:0]
				for _, h := range unsafe.Slice(ready, int(*n)) {
					hs = append(hs, uint64(h))
				}
				for _, h := range hs {
					d.dispatch(h)
				}
				if len(d.full) > 0 {
					d.refill()
				}
			}
		})
		if err != nil {
			panic("herald: the watch set's descriptor failed: " + err.Error())
		}
	}
}

// fullSpins: how many times in a row the loop yields to consumers that
// made no room in their full channels before it hands them to their feeds.
const fullSpins = 20
