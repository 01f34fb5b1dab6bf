package herald

/*
#include <stdlib.h>
#include "hg.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// ListRequest is what to list, as Kubernetes' LIST.
type ListRequest struct {
	Scope         Scope
	ScopeValue    string
	LabelSelector string
	FieldSelector string
	// ResourceVersion: unset: the latest; At(0): any; with MatchExact:
	// that version, from the history.
	ResourceVersion Version
	Match           Match
	// Limit is the most items per page; 0: all.
	Limit int
	// Continue is the previous page's token (empty: the first page).
	Continue string
}

// Item is one object of a list or a get (copied: the caller owns it).
type Item struct {
	Key             string
	Payload         []byte
	ResourceVersion uint64
}

// ListPage is one page of a list.
type ListPage struct {
	Items []Item
	// ResourceVersion is the version the list was read at.
	ResourceVersion uint64
	// Continue is the next page's token; empty on the last page.
	Continue string
}

// List reads one page from the cache.
func (e *Engine) List(req ListRequest) (*ListPage, error) {
	if req.Limit < 0 {
		return nil, &Error{Code: ErrInvalid.Code, Op: "list", Message: "negative limit"}
	}
	rv, flags := versionFlags(req.ResourceVersion, req.Match)
	sv, svl := cstr(req.ScopeValue)
	ls, lsl := cstr(req.LabelSelector)
	fs, fsl := cstr(req.FieldSelector)
	ct, ctl := cstr(req.Continue)
	var list C.uint64_t
	var n C.size_t
	r := C.hg_list(C.uint64_t(e.h), C.int32_t(req.Scope), sv, svl, ls, lsl, fs, fsl,
		C.uint64_t(rv), C.uint32_t(flags), C.size_t(req.Limit), ct, ctl, &list, &n)
	runtime.KeepAlive(req)
	if err := check("list", r); err != nil {
		return nil, err
	}
	return readList(uint64(list), int(n))
}

// Get reads one object by key ("namespace/name"): nil when absent, and
// the version read at. Version rules as List's, without paging.
func (e *Engine) Get(key string, at Version, match Match) (*Item, uint64, error) {
	rv, flags := versionFlags(at, match)
	k, kl := cstr(key)
	var list C.uint64_t
	var n C.size_t
	r := C.hg_get(C.uint64_t(e.h), k, kl, C.uint64_t(rv), C.uint32_t(flags), &list, &n)
	runtime.KeepAlive(key)
	if err := check("get", r); err != nil {
		return nil, 0, err
	}
	page, err := readList(uint64(list), int(n))
	if err != nil {
		return nil, 0, err
	}
	if len(page.Items) == 0 {
		return nil, page.ResourceVersion, nil
	}
	return &page.Items[0], page.ResourceVersion, nil
}

// readList copies a list handle's items out and frees it.
func readList(list uint64, n int) (*ListPage, error) {
	defer C.hg_list_free(C.uint64_t(list))
	size := n
	if size == 0 {
		size = 1
	}
	items := (*C.herald_item)(C.calloc(C.size_t(size), C.size_t(unsafe.Sizeof(C.herald_item{}))))
	info := (*C.herald_bytes)(C.calloc(1, C.size_t(unsafe.Sizeof(C.herald_bytes{}))))
	rv := (*C.uint64_t)(C.calloc(1, 8))
	defer C.free(unsafe.Pointer(items))
	defer C.free(unsafe.Pointer(info))
	defer C.free(unsafe.Pointer(rv))
	if items == nil || info == nil || rv == nil {
		return nil, &Error{Code: ErrSystem.Code, Op: "list", Message: "out of memory"}
	}
	if err := check("list", C.hg_list_read(C.uint64_t(list), items, C.size_t(n), rv, info)); err != nil {
		return nil, err
	}
	page := &ListPage{Items: make([]Item, n), ResourceVersion: uint64(*rv)}
	for i, it := range unsafe.Slice(items, n) {
		page.Items[i] = Item{
			Key:             C.GoStringN((*C.char)(unsafe.Pointer(it.key.ptr)), C.int(it.key.len)),
			Payload:         C.GoBytes(unsafe.Pointer(it.payload.ptr), C.int(it.payload.len)),
			ResourceVersion: uint64(it.resource_version),
		}
	}
	if info.len > 0 {
		page.Continue = string(C.GoBytes(unsafe.Pointer(info.ptr), C.int(info.len)))
	}
	return page, nil
}
