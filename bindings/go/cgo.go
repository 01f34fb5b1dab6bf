package herald

/*
#cgo CFLAGS: -I${SRCDIR}/../c/include
#cgo LDFLAGS: -lpthread -ldl -lm
#include <stdlib.h>
#include "hg.h"
*/
import "C"

import (
	"unsafe"
)

// check turns a wrapper's result into an error (nil for HERALD_OK and
// HERALD_PENDING), freeing the message.
func check(op string, r C.hg_res) error {
	if r.status >= 0 {
		return nil
	}
	msg := ""
	if r.msg != nil {
		msg = C.GoString(r.msg)
		C.free(unsafe.Pointer(r.msg))
	}
	return newError(op, int(r.status), msg)
}

// cstr gives a Go string's bytes and length to C (read during the call
// only; pointer-free memory, as cgo's rules allow).
func cstr(s string) (*C.char, C.size_t) {
	if len(s) == 0 {
		return nil, 0
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

// encoded is objects as hg_decode reads them.
type encoded struct {
	blob  []byte
	lens  []uint64
	pairs int
}

func (e *encoded) add(o *Object) {
	e.lens = append(e.lens, uint64(len(o.Namespace)), uint64(len(o.Name)),
		uint64(len(o.Labels)), uint64(len(o.Fields)))
	e.blob = append(e.blob, o.Namespace...)
	e.blob = append(e.blob, o.Name...)
	for _, m := range []map[string]string{o.Labels, o.Fields} {
		for k, v := range m {
			e.lens = append(e.lens, uint64(len(k)), uint64(len(v)))
			e.blob = append(e.blob, k...)
			e.blob = append(e.blob, v...)
			e.pairs++
		}
	}
	e.lens = append(e.lens, uint64(len(o.Payload)))
	e.blob = append(e.blob, o.Payload...)
}

// ptrs gives the blob and lengths to C (never null: an empty blob gets a
// byte, so pointer arithmetic on it is defined).
func (e *encoded) ptrs() (*C.uint8_t, *C.uint64_t) {
	if len(e.blob) == 0 {
		e.blob = append(e.blob, 0)
	}
	if len(e.lens) == 0 {
		e.lens = append(e.lens, 0)
	}
	return (*C.uint8_t)(unsafe.Pointer(&e.blob[0])), (*C.uint64_t)(unsafe.Pointer(&e.lens[0]))
}
