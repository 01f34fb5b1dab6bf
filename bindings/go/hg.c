// C helpers of the Go binding: each calls Herald and, on an error, copies
// herald_last_error in the same call (the same OS thread).
#include <stdlib.h>
#include <string.h>
#include "herald.h"
#include "hg.h"

// Every wrapper returns the status and, on an error, the calling thread's
// herald_last_error copied into malloc'd memory: fetched in the same cgo
// call as the failing function, so on the same OS thread.

static hg_res hg_res_of(int32_t s) {
	hg_res r = {s, NULL};
	if (s < 0) {
		size_t n = herald_last_error(NULL, 0);
		r.msg = malloc(n + 1);
		if (r.msg != NULL) {
			herald_last_error(r.msg, n + 1);
		}
	}
	return r;
}

static herald_str hg_str(const char *p, size_t n) {
	herald_str s = {n ? p : NULL, n};
	return s;
}

// Objects come from Go as one pointer-free blob of bytes and one array
// of lengths: per object namespace, name, #labels, #fields, then each
// pair's key and value lengths, then the payload's length; the bytes in
// the same order.
static void hg_decode(const uint8_t *blob, const uint64_t *lens, size_t nobj,
		herald_object *objs, herald_pair *pairs) {
	size_t bo = 0, li = 0, pi = 0;
	for (size_t i = 0; i < nobj; i++) {
		herald_object *o = &objs[i];
		uint64_t nsl = lens[li++], nl = lens[li++], nlab = lens[li++], nf = lens[li++];
		o->namespace_ = hg_str((const char *)blob + bo, nsl); bo += nsl;
		o->name = hg_str((const char *)blob + bo, nl); bo += nl;
		uint64_t np[2] = {nlab, nf};
		for (int k = 0; k < 2; k++) {
			herald_pair *first = np[k] ? &pairs[pi] : NULL;
			for (uint64_t j = 0; j < np[k]; j++) {
				uint64_t kl = lens[li++], vl = lens[li++];
				pairs[pi].key = hg_str((const char *)blob + bo, kl); bo += kl;
				pairs[pi].value = hg_str((const char *)blob + bo, vl); bo += vl;
				pi++;
			}
			if (k == 0) { o->labels = first; o->labels_len = nlab; }
			else { o->fields = first; o->fields_len = nf; }
		}
		uint64_t pl = lens[li++];
		o->payload.ptr = pl ? blob + bo : NULL;
		o->payload.len = pl;
		bo += pl;
	}
}

hg_res hg_engine_new(const char *fields_blob, const uint64_t *field_lens, size_t nfields,
		size_t lower, size_t upper, uint32_t flags, uint64_t *e, uint64_t *w) {
	herald_config cfg;
	memset(&cfg, 0, sizeof cfg);
	herald_str *fs = NULL;
	if (nfields) {
		fs = calloc(nfields, sizeof *fs);
		if (!fs) return hg_res_of(HERALD_E_SYSTEM);
		size_t bo = 0;
		for (size_t i = 0; i < nfields; i++) {
			fs[i] = hg_str(fields_blob + bo, field_lens[i]);
			bo += field_lens[i];
		}
	}
	cfg.indexed_fields = fs;
	cfg.indexed_fields_len = nfields;
	cfg.history_lower = lower;
	cfg.history_upper = upper;
	hg_res r = hg_res_of(herald_engine_new_flags(&cfg, flags, e, w));
	free(fs);
	return r;
}

hg_res hg_engine_stop(uint64_t e) { return hg_res_of(herald_engine_stop(e)); }
hg_res hg_engine_free(uint64_t e) { return hg_res_of(herald_engine_free(e)); }
hg_res hg_engine_rv(uint64_t e, uint64_t *out) {
	return hg_res_of(herald_engine_resource_version(e, out));
}
hg_res hg_engine_stats(uint64_t e, herald_stats *out) {
	return hg_res_of(herald_engine_stats(e, out));
}

hg_res hg_apply(uint64_t w, int32_t kind, uint64_t rv, const uint8_t *blob,
		const uint64_t *lens, size_t npairs) {
	herald_pair stack[16];
	herald_pair *pairs = npairs <= 16 ? stack : malloc(npairs * sizeof *pairs);
	if (!pairs) return hg_res_of(HERALD_E_SYSTEM);
	herald_object o;
	hg_decode(blob, lens, 1, &o, pairs);
	hg_res r = hg_res_of(herald_writer_apply(w, kind, rv, &o));
	if (pairs != stack) free(pairs);
	return r;
}

// n changes: kinds[i], rvs[i], and object i of the blob (as hg_replace's).
hg_res hg_apply_batch(uint64_t w, const int32_t *kinds, const uint64_t *rvs, const uint8_t *blob,
		const uint64_t *lens, size_t n, size_t npairs, size_t *applied) {
	herald_object *objs = n ? calloc(n, sizeof *objs) : NULL;
	herald_change *chs = n ? calloc(n, sizeof *chs) : NULL;
	herald_pair *pairs = npairs ? calloc(npairs, sizeof *pairs) : NULL;
	if ((n && (!objs || !chs)) || (npairs && !pairs)) {
		free(objs); free(chs); free(pairs);
		*applied = 0;
		return hg_res_of(HERALD_E_SYSTEM);
	}
	hg_decode(blob, lens, n, objs, pairs);
	for (size_t i = 0; i < n; i++) {
		chs[i].kind = kinds[i];
		chs[i].resource_version = rvs[i];
		chs[i].object = objs[i];
	}
	hg_res r = hg_res_of(herald_writer_apply_batch(w, chs, n, applied));
	free(objs); free(chs); free(pairs);
	return r;
}

hg_res hg_replace(uint64_t w, const uint8_t *blob, const uint64_t *lens, size_t nobj,
		size_t npairs, uint64_t rv) {
	herald_object *objs = nobj ? calloc(nobj, sizeof *objs) : NULL;
	herald_pair *pairs = npairs ? calloc(npairs, sizeof *pairs) : NULL;
	if ((nobj && !objs) || (npairs && !pairs)) {
		free(objs); free(pairs);
		return hg_res_of(HERALD_E_SYSTEM);
	}
	hg_decode(blob, lens, nobj, objs, pairs);
	hg_res r = hg_res_of(herald_writer_replace(w, objs, nobj, rv));
	free(objs); free(pairs);
	return r;
}

hg_res hg_progress(uint64_t w, uint64_t rv) { return hg_res_of(herald_writer_progress(w, rv)); }
hg_res hg_writer_free(uint64_t w) { return hg_res_of(herald_writer_free(w)); }

hg_res hg_watch_open(uint64_t e, int32_t scope, const char *sv, size_t svl,
		const char *ls, size_t lsl, const char *fs, size_t fsl, uint64_t rv, uint32_t flags,
		uint64_t timeout_ms, uint64_t *out) {
	herald_watch_request r;
	memset(&r, 0, sizeof r);
	r.scope = scope;
	r.scope_value = hg_str(sv, svl);
	r.label_selector = hg_str(ls, lsl);
	r.field_selector = hg_str(fs, fsl);
	r.resource_version = rv;
	r.flags = flags;
	r.timeout_ms = timeout_ms;
	return hg_res_of(herald_watch_open(e, &r, out));
}

// Polls into a C array (events, end and count in C memory: the views
// are C pointers, copied by Go before the next call on the watch).
hg_res hg_watch_poll(uint64_t w, herald_event *evs, size_t max, size_t *n, herald_end *end) {
	return hg_res_of(herald_watch_poll(w, evs, max, n, end));
}
hg_res hg_watch_poll_arming(uint64_t w, herald_event *evs, size_t max, size_t *n, herald_end *end,
		bool *armed) {
	return hg_res_of(herald_watch_poll_arming(w, evs, max, n, end, armed));
}
hg_res hg_watch_stop(uint64_t w) { return hg_res_of(herald_watch_stop(w)); }
hg_res hg_watch_free(uint64_t w) { return hg_res_of(herald_watch_free(w)); }

hg_res hg_set_new(uint64_t *s, int32_t *fd) {
	hg_res r = hg_res_of(herald_watch_set_new(s));
	if (r.status < 0) return r;
	return hg_res_of(herald_watch_set_fd(*s, fd));
}
hg_res hg_set_add(uint64_t s, uint64_t w) { return hg_res_of(herald_watch_set_add(s, w)); }
hg_res hg_set_ready(uint64_t s, uint64_t *out, size_t max, size_t *n) {
	return hg_res_of(herald_watch_set_ready(s, out, max, n));
}

// Lists and reads the page in one call: the list handle, its length, its
// version and its continue token's length; the items go to hg_list_read.
hg_res hg_list(uint64_t e, int32_t scope, const char *sv, size_t svl,
		const char *ls, size_t lsl, const char *fs, size_t fsl, uint64_t rv, uint32_t flags,
		size_t limit, const char *ct, size_t ctl, uint64_t *list, size_t *len) {
	herald_list_request r;
	memset(&r, 0, sizeof r);
	r.scope = scope;
	r.scope_value = hg_str(sv, svl);
	r.label_selector = hg_str(ls, lsl);
	r.field_selector = hg_str(fs, fsl);
	r.resource_version = rv;
	r.flags = flags;
	r.limit = limit;
	r.continue_token = hg_str(ct, ctl);
	hg_res res = hg_res_of(herald_engine_list(e, &r, list));
	if (res.status < 0) return res;
	res = hg_res_of(herald_list_len(*list, len));
	if (res.status < 0) herald_list_free(*list);
	return res;
}

hg_res hg_get(uint64_t e, const char *key, size_t keyl, uint64_t rv, uint32_t flags,
		uint64_t *list, size_t *len) {
	hg_res res = hg_res_of(herald_engine_get(e, hg_str(key, keyl), rv, flags, list));
	if (res.status < 0) return res;
	res = hg_res_of(herald_list_len(*list, len));
	if (res.status < 0) herald_list_free(*list);
	return res;
}

// Fills n items (a C array) and the page's version and continue token.
hg_res hg_list_read(uint64_t list, herald_item *items, size_t n, uint64_t *rv,
		herald_bytes *cont) {
	for (size_t i = 0; i < n; i++) {
		int32_t s = herald_list_item(list, i, &items[i]);
		if (s < 0) return hg_res_of(s);
	}
	return hg_res_of(herald_list_info(list, rv, cont));
}
hg_res hg_list_free(uint64_t list) { return hg_res_of(herald_list_free(list)); }
