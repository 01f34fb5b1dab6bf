#ifndef HG_H
#define HG_H
#include <stddef.h>
#include <stdint.h>
#include "herald.h"

typedef struct {
	int32_t status;
	char *msg;
} hg_res;

hg_res hg_engine_new(const char *fields_blob, const uint64_t *field_lens, size_t nfields, size_t lower, size_t upper, uint32_t flags, uint64_t *e, uint64_t *w);
hg_res hg_engine_stop(uint64_t e);
hg_res hg_engine_free(uint64_t e);
hg_res hg_engine_rv(uint64_t e, uint64_t *out);
hg_res hg_engine_stats(uint64_t e, herald_stats *out);
hg_res hg_apply(uint64_t w, int32_t kind, uint64_t rv, const uint8_t *blob, const uint64_t *lens, size_t npairs);
hg_res hg_apply_batch(uint64_t w, const int32_t *kinds, const uint64_t *rvs, const uint8_t *blob, const uint64_t *lens, size_t n, size_t npairs, size_t *applied);
hg_res hg_replace(uint64_t w, const uint8_t *blob, const uint64_t *lens, size_t nobj, size_t npairs, uint64_t rv);
hg_res hg_progress(uint64_t w, uint64_t rv);
hg_res hg_writer_free(uint64_t w);
hg_res hg_watch_open(uint64_t e, int32_t scope, const char *sv, size_t svl, const char *ls, size_t lsl, const char *fs, size_t fsl, uint64_t rv, uint32_t flags, uint64_t timeout_ms, uint64_t *out);
hg_res hg_watch_poll(uint64_t w, herald_event *evs, size_t max, size_t *n, herald_end *end);
hg_res hg_watch_poll_arming(uint64_t w, herald_event *evs, size_t max, size_t *n, herald_end *end, bool *armed);
hg_res hg_watch_stop(uint64_t w);
hg_res hg_watch_free(uint64_t w);
hg_res hg_set_new(uint64_t *s, int32_t *fd);
hg_res hg_set_add(uint64_t s, uint64_t w);
hg_res hg_set_ready(uint64_t s, uint64_t *out, size_t max, size_t *n);
hg_res hg_list(uint64_t e, int32_t scope, const char *sv, size_t svl, const char *ls, size_t lsl, const char *fs, size_t fsl, uint64_t rv, uint32_t flags, size_t limit, const char *ct, size_t ctl, uint64_t *list, size_t *len);
hg_res hg_get(uint64_t e, const char *key, size_t keyl, uint64_t rv, uint32_t flags, uint64_t *list, size_t *len);
hg_res hg_list_read(uint64_t list, herald_item *items, size_t n, uint64_t *rv, herald_bytes *cont);
hg_res hg_list_free(uint64_t list);

#endif
