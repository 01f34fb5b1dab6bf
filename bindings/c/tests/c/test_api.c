/* The C ABI from C: every entry point, its errors, and hostile use
 * (null pointers, made-up, stale and double-freed handles, calls after
 * close, many threads at once, a consumer that never reads). Built and
 * run by bindings/c/test.sh, also under AddressSanitizer and valgrind. */

#include "herald.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      char msg_[512];                                                          \
      herald_last_error(msg_, sizeof msg_);                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed (last error: %s)\n", __FILE__,  \
              __LINE__, #cond, msg_);                                          \
      failures++;                                                              \
    }                                                                          \
  } while (0)

#define EXPECT(call, status) CHECK((call) == (status))

static herald_str S(const char *s) {
  herald_str out = {s, s ? strlen(s) : 0};
  return out;
}

static herald_object pod(const char *ns, const char *name, const char *app,
                         const char *node, const char *payload) {
  static __thread herald_pair labels[1];
  static __thread herald_pair fields[1];
  labels[0].key = S("app");
  labels[0].value = S(app);
  fields[0].key = S("spec.nodeName");
  fields[0].value = S(node);
  herald_object o;
  memset(&o, 0, sizeof o);
  o.namespace_ = S(ns);
  o.name = S(name);
  o.labels = labels;
  o.labels_len = 1;
  o.fields = fields;
  o.fields_len = 1;
  o.payload.ptr = (const uint8_t *)payload;
  o.payload.len = strlen(payload);
  return o;
}

static herald_watch_request watch_all(uint64_t rv) {
  herald_watch_request r;
  memset(&r, 0, sizeof r);
  r.scope = HERALD_SCOPE_ALL;
  r.resource_version = rv;
  r.flags = HERALD_HAS_RESOURCE_VERSION;
  return r;
}

static int bytes_eq(herald_bytes b, const char *s) {
  return b.len == strlen(s) && (b.len == 0 || memcmp(b.ptr, s, b.len) == 0);
}

static void last_error_contains(const char *needle) {
  char msg[512];
  size_t n = herald_last_error(msg, sizeof msg);
  CHECK(n > 0);
  if (!strstr(msg, needle)) {
    fprintf(stderr, "last error %s lacks %s\n", msg, needle);
    failures++;
  }
}

/* Writes, reads, lists with pages, gets. */
static void test_write_and_read(void) {
  herald_engine e;
  herald_writer w;
  herald_str indexed[1] = {S("spec.nodeName")};
  herald_config cfg = {indexed, 1, 0, 0};
  EXPECT(herald_engine_new(&cfg, &e, &w), HERALD_OK);
  herald_object objs[3] = {pod("ns", "a", "web", "n1", "{\"a\":1}"),
                           pod("ns", "b", "db", "n2", "{\"b\":1}"),
                           pod("other", "c", "web", "n1", "{\"c\":1}")};
  /* The three built with the same thread-local labels: rebuild each. */
  herald_pair la[3][1], fa[3][1];
  const char *apps[3] = {"web", "db", "web"}, *nodes[3] = {"n1", "n2", "n1"};
  for (int i = 0; i < 3; i++) {
    la[i][0].key = S("app");
    la[i][0].value = S(apps[i]);
    fa[i][0].key = S("spec.nodeName");
    fa[i][0].value = S(nodes[i]);
    objs[i].labels = la[i];
    objs[i].fields = fa[i];
  }
  EXPECT(herald_writer_replace(w, objs, 3, 10), HERALD_OK);
  uint64_t rv = 0;
  EXPECT(herald_engine_resource_version(e, &rv), HERALD_OK);
  CHECK(rv == 10);

  herald_object a2 = pod("ns", "a", "web", "n1", "{\"a\":2}");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_MODIFIED, 11, &a2), HERALD_OK);
  /* Out of order: refused, nothing changed. */
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_MODIFIED, 11, &a2),
         HERALD_E_OUT_OF_ORDER);
  last_error_contains("11");
  EXPECT(herald_writer_progress(w, 15), HERALD_OK);
  EXPECT(herald_engine_resource_version(e, &rv), HERALD_OK);
  CHECK(rv == 15);

  /* A list in pages of 2, with a label selector. */
  herald_list_request lr;
  memset(&lr, 0, sizeof lr);
  lr.label_selector = S("app=web");
  lr.limit = 1;
  herald_list l;
  EXPECT(herald_engine_list(e, &lr, &l), HERALD_OK);
  size_t n = 0;
  EXPECT(herald_list_len(l, &n), HERALD_OK);
  CHECK(n == 1);
  herald_item item;
  EXPECT(herald_list_item(l, 0, &item), HERALD_OK);
  CHECK(bytes_eq(item.key, "ns/a"));
  CHECK(bytes_eq(item.payload, "{\"a\":2}"));
  CHECK(item.resource_version == 11);
  EXPECT(herald_list_item(l, 1, &item), HERALD_E_INVALID);
  herald_bytes token;
  uint64_t list_rv = 0;
  EXPECT(herald_list_info(l, &list_rv, &token), HERALD_OK);
  CHECK(list_rv == 15);
  CHECK(token.len > 0);
  char tok[256];
  CHECK(token.len < sizeof tok);
  memcpy(tok, token.ptr, token.len);
  lr.continue_token.ptr = tok;
  lr.continue_token.len = token.len;
  herald_list l2;
  EXPECT(herald_engine_list(e, &lr, &l2), HERALD_OK);
  EXPECT(herald_list_len(l2, &n), HERALD_OK);
  CHECK(n == 1);
  EXPECT(herald_list_item(l2, 0, &item), HERALD_OK);
  CHECK(bytes_eq(item.key, "other/c"));
  EXPECT(herald_list_info(l2, NULL, &token), HERALD_OK);
  CHECK(token.len == 0);
  EXPECT(herald_list_free(l), HERALD_OK);
  EXPECT(herald_list_free(l2), HERALD_OK);
  EXPECT(herald_list_free(l2), HERALD_E_HANDLE); /* double free */

  /* A malformed continue token, and an exact read at 10 (history). */
  lr.continue_token = S("not-a-token");
  EXPECT(herald_engine_list(e, &lr, &l), HERALD_E_INVALID);
  memset(&lr, 0, sizeof lr);
  lr.resource_version = 10;
  lr.flags = HERALD_HAS_RESOURCE_VERSION | HERALD_MATCH_EXACT;
  EXPECT(herald_engine_list(e, &lr, &l), HERALD_OK);
  EXPECT(herald_list_item(l, 0, &item), HERALD_OK);
  CHECK(bytes_eq(item.payload, "{\"a\":1}"));
  EXPECT(herald_list_free(l), HERALD_OK);

  /* Gets: present, absent. */
  EXPECT(herald_engine_get(e, S("ns/b"), 0, 0, &l), HERALD_OK);
  EXPECT(herald_list_len(l, &n), HERALD_OK);
  CHECK(n == 1);
  EXPECT(herald_list_free(l), HERALD_OK);
  EXPECT(herald_engine_get(e, S("ns/zz"), 0, 0, &l), HERALD_OK);
  EXPECT(herald_list_len(l, &n), HERALD_OK);
  CHECK(n == 0);
  EXPECT(herald_list_free(l), HERALD_OK);

  herald_stats st;
  EXPECT(herald_engine_stats(e, &st), HERALD_OK);
  CHECK(st.changes_received >= 1);

  EXPECT(herald_writer_free(w), HERALD_OK);
  EXPECT(herald_engine_free(e), HERALD_OK);
}

/* Watches: poll, wait, selectors, ends with reasons. */
static void test_watch(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);

  herald_watch_request r = watch_all(1);
  r.field_selector = S("spec.nodeName=n1");
  herald_watch wn1;
  EXPECT(herald_watch_open(e, &r, &wn1), HERALD_OK);
  herald_event evs[8];
  size_t n = 99;
  herald_end end;
  EXPECT(herald_watch_poll(wn1, evs, 8, &n, &end), HERALD_PENDING);
  CHECK(n == 0 && end.reason == HERALD_END_NONE);

  herald_object a = pod("ns", "a", "web", "n1", "A1");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 2, &a), HERALD_OK);
  herald_object b = pod("ns", "b", "web", "n2", "B1");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 3, &b), HERALD_OK);
  /* a moves off n1: a DELETED for this watcher, with its last state. */
  herald_object a2 = pod("ns", "a", "web", "n2", "A2");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_MODIFIED, 4, &a2), HERALD_OK);

  size_t got = 0;
  uint64_t rvs[2];
  int kinds[2];
  while (got < 2) {
    EXPECT(herald_watch_wait(wn1, evs, 8, 10000, &n, &end), HERALD_OK);
    CHECK(end.reason == HERALD_END_NONE);
    for (size_t i = 0; i < n && got < 2; i++, got++) {
      rvs[got] = evs[i].resource_version;
      kinds[got] = evs[i].kind;
      CHECK(bytes_eq(evs[i].key, "ns/a"));
      CHECK(bytes_eq(evs[i].payload, got == 0 ? "A1" : "A1"));
    }
    if (n == 0)
      break;
  }
  CHECK(got == 2);
  CHECK(rvs[0] == 2 && kinds[0] == HERALD_EVENT_ADDED);
  CHECK(rvs[1] == 4 && kinds[1] == HERALD_EVENT_DELETED);

  /* A wait that times out. */
  EXPECT(herald_watch_wait(wn1, evs, 8, 20, &n, &end), HERALD_PENDING);

  /* Stop: the end, reported again by every later call. */
  EXPECT(herald_watch_stop(wn1), HERALD_OK);
  EXPECT(herald_watch_wait(wn1, evs, 8, 10000, &n, &end), HERALD_OK);
  CHECK(n == 0 && end.reason == HERALD_END_STOPPED);
  EXPECT(herald_watch_poll(wn1, evs, 8, &n, &end), HERALD_OK);
  CHECK(end.reason == HERALD_END_STOPPED);
  EXPECT(herald_watch_free(wn1), HERALD_OK);
  EXPECT(herald_watch_free(wn1), HERALD_E_HANDLE);
  EXPECT(herald_watch_poll(wn1, evs, 8, &n, &end), HERALD_E_HANDLE);

  /* Bad selectors, bad flags, bad scope: typed errors, nothing opened. */
  herald_watch bad = 0;
  r = watch_all(1);
  r.label_selector = S("app in (web");
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  last_error_contains("label selector");
  r = watch_all(1);
  r.field_selector = S("spec.nodeName~n1");
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  r = watch_all(1);
  r.flags |= 1u << 30;
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  r = watch_all(1);
  r.scope = 42;
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  r = watch_all(1);
  r.label_selector.ptr = "\xff\xfe";
  r.label_selector.len = 2;
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  last_error_contains("UTF-8");
  r = watch_all(1);
  r.flags |= HERALD_SEND_INITIAL_EVENTS; /* needs NotOlderThan */
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_INVALID);
  CHECK(bad == 0);

  /* sendInitialEvents: the state, the initial-events-end bookmark. */
  r = watch_all(0);
  r.flags = HERALD_SEND_INITIAL_EVENTS | HERALD_MATCH_NOT_OLDER_THAN |
            HERALD_ALLOW_BOOKMARKS;
  herald_watch wi;
  EXPECT(herald_watch_open(e, &r, &wi), HERALD_OK);
  int saw_end_bookmark = 0, added = 0;
  for (int tries = 0; tries < 10 && !saw_end_bookmark; tries++) {
    EXPECT(herald_watch_wait(wi, evs, 8, 10000, &n, &end), HERALD_OK);
    for (size_t i = 0; i < n; i++) {
      if (evs[i].kind == HERALD_EVENT_ADDED)
        added++;
      if (evs[i].kind == HERALD_EVENT_BOOKMARK &&
          (evs[i].flags & HERALD_EVENT_INITIAL_EVENTS_END))
        saw_end_bookmark = 1;
    }
  }
  CHECK(added == 2 && saw_end_bookmark);
  EXPECT(herald_watch_free(wi), HERALD_OK);

  /* A version from the future ends the watch after the engine's wait
   * (3 s) with the version it asked and the cache's. */
  r = watch_all(1000);
  r.timeout_ms = 0;
  herald_watch wf;
  EXPECT(herald_watch_open(e, &r, &wf), HERALD_OK);
  EXPECT(herald_watch_wait(wf, evs, 8, 20000, &n, &end), HERALD_OK);
  CHECK(end.reason == HERALD_END_TOO_LARGE_RESOURCE_VERSION);
  CHECK(end.requested == 1000 && end.bound == 4);
  EXPECT(herald_watch_free(wf), HERALD_OK);

  /* The largest timeout is no timeout's overflow: the watch opens. */
  r = watch_all(4);
  r.timeout_ms = UINT64_MAX;
  herald_watch wmax;
  EXPECT(herald_watch_open(e, &r, &wmax), HERALD_OK);
  EXPECT(herald_watch_poll(wmax, evs, 8, &n, &end), HERALD_PENDING);
  EXPECT(herald_watch_free(wmax), HERALD_OK);
  /* max 0: nothing taken, nothing written. */
  EXPECT(herald_watch_open(e, &r, &wmax), HERALD_OK);
  EXPECT(herald_watch_poll(wmax, NULL, 0, &n, &end), HERALD_PENDING);
  CHECK(n == 0);
  EXPECT(herald_watch_free(wmax), HERALD_OK);

  /* A deadline. */
  r = watch_all(4);
  r.timeout_ms = 30;
  herald_watch wd;
  EXPECT(herald_watch_open(e, &r, &wd), HERALD_OK);
  EXPECT(herald_watch_wait(wd, evs, 8, 20000, &n, &end), HERALD_OK);
  CHECK(end.reason == HERALD_END_DEADLINE);
  EXPECT(herald_watch_free(wd), HERALD_OK);

  /* The engine stops: open watches end, writes and new watches fail. */
  herald_watch ws;
  r = watch_all(4);
  EXPECT(herald_watch_open(e, &r, &ws), HERALD_OK);
  EXPECT(herald_engine_stop(e), HERALD_OK);
  EXPECT(herald_watch_wait(ws, evs, 8, 20000, &n, &end), HERALD_OK);
  CHECK(end.reason == HERALD_END_ENGINE_STOPPED);
  herald_object c = pod("ns", "c", "web", "n1", "C");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 5, &c), HERALD_E_STOPPED);
  EXPECT(herald_watch_open(e, &r, &bad), HERALD_E_STOPPED);
  EXPECT(herald_watch_free(ws), HERALD_OK);
  EXPECT(herald_writer_free(w), HERALD_OK);
  EXPECT(herald_engine_free(e), HERALD_OK);
}

/* A watch from a version the history no longer holds: 410. */
static void test_gone(void) {
  herald_engine e;
  herald_writer w;
  herald_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.history_lower = 16;
  cfg.history_upper = 64;
  EXPECT(herald_engine_new(&cfg, &e, &w), HERALD_OK);
  cfg.history_lower = 65; /* above the upper bound */
  herald_engine bad_e;
  herald_writer bad_w;
  EXPECT(herald_engine_new(&cfg, &bad_e, &bad_w), HERALD_E_INVALID);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  char name[32];
  for (uint64_t i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "p%llu", (unsigned long long)i);
    herald_object o = pod("ns", name, "web", "n1", "x");
    EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 2 + i, &o), HERALD_OK);
  }
  herald_watch_request r = watch_all(1);
  herald_watch g = 0;
  herald_status s = herald_watch_open(e, &r, &g);
  if (s == HERALD_OK) {
    herald_event evs[4];
    size_t n;
    herald_end end;
    EXPECT(herald_watch_wait(g, evs, 4, 10000, &n, &end), HERALD_OK);
    CHECK(end.reason == HERALD_END_GONE);
    CHECK(end.requested == 1 && end.bound > 1);
    EXPECT(herald_watch_free(g), HERALD_OK);
  } else {
    CHECK(s == HERALD_E_GONE);
  }
  herald_writer_free(w);
  herald_engine_free(e);
}

/* Null pointers, made-up handles, handles of the wrong kind. */
static void test_hostile_arguments(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new(NULL, NULL, &w), HERALD_E_NULL);
  EXPECT(herald_engine_new(NULL, &e, NULL), HERALD_E_NULL);
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 1, NULL), HERALD_E_NULL);
  herald_object o = pod("ns", "a", "web", "n1", "x");
  EXPECT(herald_writer_apply(w, 99, 1, &o), HERALD_E_INVALID);
  herald_object slash = pod("ns", "a/b", "web", "n1", "x");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 1, &slash),
         HERALD_E_INVALID);
  o.name.ptr = NULL; /* with a length */
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 1, &o), HERALD_E_NULL);
  EXPECT(herald_writer_replace(w, NULL, 3, 1), HERALD_E_NULL);
  /* Handles: 0, made up, of the wrong kind. */
  EXPECT(herald_engine_stop(0), HERALD_E_HANDLE);
  EXPECT(herald_engine_stop(0xdeadbeef), HERALD_E_HANDLE);
  EXPECT(herald_engine_stop(UINT64_MAX), HERALD_E_HANDLE);
  EXPECT(herald_engine_stop(w), HERALD_E_HANDLE); /* a writer */
  EXPECT(herald_writer_progress(e, 5), HERALD_E_HANDLE); /* an engine */
  EXPECT(herald_watch_stop(e), HERALD_E_HANDLE);
  EXPECT(herald_list_free(w), HERALD_E_HANDLE);
  herald_watch_request r = watch_all(0);
  EXPECT(herald_watch_open(e, NULL, NULL), HERALD_E_NULL);
  EXPECT(herald_watch_open(e, &r, NULL), HERALD_E_NULL);
  herald_watch wt;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  herald_event ev[1];
  size_t n;
  herald_end end;
  EXPECT(herald_watch_poll(wt, NULL, 1, &n, &end), HERALD_E_NULL);
  EXPECT(herald_watch_poll(wt, ev, 1, NULL, &end), HERALD_E_NULL);
  EXPECT(herald_watch_poll(wt, ev, 1, &n, NULL), HERALD_E_NULL);
  EXPECT(herald_engine_resource_version(e, NULL), HERALD_E_NULL);
  /* The message: cut to fit, NUL-terminated, full length returned. */
  EXPECT(herald_engine_stop(0xdeadbeef), HERALD_E_HANDLE);
  char tiny[8];
  size_t full = herald_last_error(tiny, sizeof tiny);
  CHECK(full > sizeof tiny && strlen(tiny) == sizeof tiny - 1);
  CHECK(herald_last_error(NULL, 0) == full);
  /* Calls after free. */
  EXPECT(herald_watch_free(wt), HERALD_OK);
  EXPECT(herald_writer_free(w), HERALD_OK);
  EXPECT(herald_writer_progress(w, 5), HERALD_E_HANDLE);
  EXPECT(herald_engine_free(e), HERALD_OK);
  EXPECT(herald_engine_free(e), HERALD_E_HANDLE);
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_E_HANDLE);
  EXPECT(herald_engine_list(e, NULL, NULL), HERALD_E_HANDLE);
}

/* One writer thread, four consumer threads of one set, one watch that is
 * never read: every consumer sees every change in order, and the writer
 * is never held up by the one that does not read. */
#define CHANGES 20000
#define WATCHES 64

struct shared {
  herald_engine e;
  herald_writer w;
  herald_watch_set set;
  herald_watch watches[WATCHES];
  uint64_t next_rv[WATCHES]; /* per watch, the next version expected */
  pthread_mutex_t lock[WATCHES];
  volatile int done;
  int errors;
};

static int index_of(struct shared *s, herald_watch h) {
  for (int i = 0; i < WATCHES; i++)
    if (s->watches[i] == h)
      return i;
  return -1;
}

/* The consumers poll with herald_watch_poll_arming (stopping at an armed
 * batch) instead of polling until HERALD_PENDING. */
static int use_arming = 0;

static void *consumer(void *arg) {
  struct shared *s = arg;
  int fd;
  if (herald_watch_set_fd(s->set, &fd) != HERALD_OK) {
    s->errors++;
    return NULL;
  }
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  herald_watch ready[16];
  herald_event evs[64];
  while (!s->done) {
    struct epoll_event out;
    if (epoll_wait(ep, &out, 1, 100) <= 0)
      continue;
    size_t nr = 0;
    if (herald_watch_set_ready(s->set, ready, 16, &nr) != HERALD_OK) {
      s->errors++;
      break;
    }
    for (size_t k = 0; k < nr; k++) {
      int i = index_of(s, ready[k]);
      if (i < 0) {
        s->errors++;
        continue;
      }
      pthread_mutex_lock(&s->lock[i]);
      for (;;) {
        size_t n = 0;
        herald_end end;
        bool armed = false;
        herald_status st =
            use_arming
                ? herald_watch_poll_arming(ready[k], evs, 64, &n, &end, &armed)
                : herald_watch_poll(ready[k], evs, 64, &n, &end);
        if (st == HERALD_PENDING)
          break;
        if (st != HERALD_OK || end.reason != HERALD_END_NONE) {
          s->errors++;
          break;
        }
        for (size_t j = 0; j < n; j++) {
          if (evs[j].resource_version != s->next_rv[i])
            s->errors++;
          s->next_rv[i] = evs[j].resource_version + 1;
        }
        if (armed)
          break; /* drained and armed: reported again when it has more */
      }
      pthread_mutex_unlock(&s->lock[i]);
    }
  }
  close(ep);
  return NULL;
}

static void test_threads_and_a_set(void) {
  struct shared s;
  memset(&s, 0, sizeof s);
  EXPECT(herald_engine_new(NULL, &s.e, &s.w), HERALD_OK);
  EXPECT(herald_writer_replace(s.w, NULL, 0, 1), HERALD_OK);
  EXPECT(herald_watch_set_new(&s.set), HERALD_OK);
  herald_watch_request r = watch_all(1);
  for (int i = 0; i < WATCHES; i++) {
    EXPECT(herald_watch_open(s.e, &r, &s.watches[i]), HERALD_OK);
    EXPECT(herald_watch_set_add(s.set, s.watches[i]), HERALD_OK);
    s.next_rv[i] = 2;
    pthread_mutex_init(&s.lock[i], NULL);
  }
  EXPECT(herald_watch_set_add(s.set, s.watches[0]), HERALD_E_INVALID);
  herald_event evs[4];
  size_t n;
  herald_end end;
  EXPECT(herald_watch_wait(s.watches[0], evs, 4, 1, &n, &end),
         HERALD_E_INVALID);
  herald_watch never_read;
  EXPECT(herald_watch_open(s.e, &r, &never_read), HERALD_OK);

  pthread_t threads[4];
  for (int t = 0; t < 4; t++)
    pthread_create(&threads[t], NULL, consumer, &s);
  herald_object o = pod("ns", "a", "web", "n1", "{\"spec\":{}}");
  for (uint64_t rv = 2; rv < 2 + CHANGES; rv++) {
    if (herald_writer_apply(s.w, rv == 2 ? HERALD_CHANGE_ADDED
                                         : HERALD_CHANGE_MODIFIED,
                            rv, &o) != HERALD_OK)
      s.errors++;
  }
  /* Every watch reaches the last version (liveness limit 60 s). */
  for (int tries = 0; tries < 6000; tries++) {
    int behind = 0;
    for (int i = 0; i < WATCHES; i++) {
      pthread_mutex_lock(&s.lock[i]);
      behind += s.next_rv[i] != 2 + CHANGES;
      pthread_mutex_unlock(&s.lock[i]);
    }
    if (!behind)
      break;
    usleep(10000);
  }
  s.done = 1;
  for (int t = 0; t < 4; t++)
    pthread_join(threads[t], NULL);
  for (int i = 0; i < WATCHES; i++) {
    if (s.next_rv[i] != 2 + CHANGES) {
      fprintf(stderr, "watch %d at %llu\n", i,
              (unsigned long long)s.next_rv[i]);
      failures++;
    }
    EXPECT(herald_watch_free(s.watches[i]), HERALD_OK);
  }
  CHECK(s.errors == 0);
  /* The one never read ended under the slow-watcher policy, or holds
   * its backlog: either way the writer finished and the others got all. */
  EXPECT(herald_watch_free(never_read), HERALD_OK);
  EXPECT(herald_watch_set_free(s.set), HERALD_OK);
  EXPECT(herald_watch_set_free(s.set), HERALD_E_HANDLE);
  herald_writer_free(s.w);
  herald_engine_free(s.e);
}

/* Waits up to 5 s for the set's descriptor to be readable. */
static int readable(herald_watch_set set, int timeout_ms) {
  int fd;
  if (herald_watch_set_fd(set, &fd) != HERALD_OK)
    return 0;
  struct pollfd p = {.fd = fd, .events = POLLIN};
  return poll(&p, 1, timeout_ms) == 1;
}

/* herald_watch_poll_arming: a batch that drains the watch arms it in the
 * same call (the set reports it again only when it has more); a full
 * batch does not (it is reported again at once); PENDING is armed; a
 * watch in no set is never armed. */
static void test_poll_arming(void) {
  herald_engine e;
  herald_writer w;
  herald_watch_set set;
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  EXPECT(herald_watch_set_new(&set), HERALD_OK);
  herald_watch_request r = watch_all(1);
  herald_watch wt, plain;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  EXPECT(herald_watch_open(e, &r, &plain), HERALD_OK);
  EXPECT(herald_watch_set_add(set, wt), HERALD_OK);
  herald_watch ready[4];
  size_t nr = 0, n = 0;
  herald_event evs[8];
  herald_end end;
  bool armed = false;
  /* Joined: reported once; nothing yet: PENDING and armed. */
  EXPECT(herald_watch_set_ready(set, ready, 4, &nr), HERALD_OK);
  CHECK(nr == 1 && ready[0] == wt);
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed),
         HERALD_PENDING);
  CHECK(n == 0 && armed);
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, NULL), HERALD_E_NULL);
  EXPECT(herald_watch_poll_arming(wt, NULL, 8, &n, &end, &armed),
         HERALD_E_NULL);

  /* One change: one batch drains it and arms it. */
  herald_object o = pod("ns", "a", "web", "n1", "A");
  EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 2, &o), HERALD_OK);
  CHECK(readable(set, 5000));
  EXPECT(herald_watch_set_ready(set, ready, 4, &nr), HERALD_OK);
  CHECK(nr == 1 && ready[0] == wt);
  armed = false;
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed), HERALD_OK);
  CHECK(n == 1 && armed && evs[0].resource_version == 2 &&
        bytes_eq(evs[0].payload, "A"));
  /* Not reported again: nothing new. */
  EXPECT(herald_watch_set_ready(set, ready, 4, &nr), HERALD_OK);
  CHECK(nr == 0);

  /* Three changes, a batch of two: not armed, reported again; the next
   * batch takes the third and arms it. */
  for (uint64_t rv = 3; rv <= 5; rv++)
    EXPECT(herald_writer_apply(w, HERALD_CHANGE_MODIFIED, rv, &o), HERALD_OK);
  CHECK(readable(set, 5000));
  /* The engine's dispatcher may still be pushing: wait for all three. */
  for (int tries = 0; tries < 500; tries++) {
    herald_stats st;
    herald_engine_stats(e, &st);
    if (st.deliveries >= 4 + 4)
      break;
    usleep(10000);
  }
  EXPECT(herald_watch_set_ready(set, ready, 4, &nr), HERALD_OK);
  CHECK(nr == 1 && ready[0] == wt);
  armed = true;
  EXPECT(herald_watch_poll_arming(wt, evs, 2, &n, &end, &armed), HERALD_OK);
  CHECK(n == 2 && !armed && evs[0].resource_version == 3 &&
        evs[1].resource_version == 4);
  EXPECT(herald_watch_set_ready(set, ready, 4, &nr), HERALD_OK);
  CHECK(nr == 1 && ready[0] == wt);
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed), HERALD_OK);
  CHECK(n == 1 && armed && evs[0].resource_version == 5);

  /* A watch in no set: its events, never armed. */
  armed = true;
  EXPECT(herald_watch_poll_arming(plain, evs, 8, &n, &end, &armed), HERALD_OK);
  CHECK(n == 4 && !armed && evs[3].resource_version == 5);

  /* The end: reported, not armed; then the same end again. */
  EXPECT(herald_watch_stop(wt), HERALD_OK);
  armed = true;
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed), HERALD_OK);
  CHECK(n == 0 && !armed && end.reason == HERALD_END_STOPPED);
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed), HERALD_OK);
  CHECK(end.reason == HERALD_END_STOPPED);
  EXPECT(herald_watch_free(wt), HERALD_OK);
  EXPECT(herald_watch_poll_arming(wt, evs, 8, &n, &end, &armed),
         HERALD_E_HANDLE);
  herald_watch_free(plain);
  herald_watch_set_free(set);
  herald_writer_free(w);
  herald_engine_free(e);
}

/* herald_writer_apply_batch: changes in order, one call; a refused
 * change stops it (the ones before it applied, counted); a malformed one
 * applies none. */
static void test_apply_batch(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  size_t applied = 99;
  herald_change ch[3];
  memset(ch, 0, sizeof ch);
  ch[0].kind = HERALD_CHANGE_ADDED;
  ch[0].resource_version = 2;
  ch[0].object = pod("ns", "a", "web", "n1", "A2");
  /* Not ready before the first list: nothing applied. */
  EXPECT(herald_writer_apply_batch(w, ch, 1, &applied), HERALD_E_NOT_READY);
  CHECK(applied == 0);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  herald_watch_request r = watch_all(1);
  herald_watch wt;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  EXPECT(herald_writer_apply_batch(w, NULL, 0, &applied), HERALD_OK);
  CHECK(applied == 0);
  EXPECT(herald_writer_apply_batch(w, NULL, 1, &applied), HERALD_E_NULL);
  ch[1].kind = HERALD_CHANGE_MODIFIED;
  ch[1].resource_version = 3;
  ch[1].object = pod("ns", "a", "web", "n1", "A3");
  ch[2].kind = HERALD_CHANGE_DELETED;
  ch[2].resource_version = 4;
  ch[2].object = pod("ns", "a", "web", "n1", "A3");
  EXPECT(herald_writer_apply_batch(w, ch, 3, &applied), HERALD_OK);
  CHECK(applied == 3);
  uint64_t rv = 0;
  EXPECT(herald_engine_resource_version(e, &rv), HERALD_OK);
  CHECK(rv == 4);
  herald_event evs[8];
  size_t n = 0, got = 0;
  herald_end end;
  const char *want[3] = {"A2", "A3", "A3"};
  for (int tries = 0; tries < 500 && got < 3; tries++) {
    herald_status st = herald_watch_wait(wt, evs, 8, 100, &n, &end);
    CHECK(st == HERALD_OK || st == HERALD_PENDING);
    for (size_t j = 0; j < n && got < 3; j++, got++) {
      CHECK(evs[j].resource_version == 2 + got);
      CHECK((int)evs[j].kind == (got == 0   ? HERALD_EVENT_ADDED
                                 : got == 1 ? HERALD_EVENT_MODIFIED
                                            : HERALD_EVENT_DELETED));
      CHECK(bytes_eq(evs[j].payload, want[got]));
    }
  }
  CHECK(got == 3);
  /* The second change is out of order: the first is applied, not the
   * third; applied_out may be null. */
  ch[0].kind = HERALD_CHANGE_ADDED;
  ch[0].resource_version = 5;
  ch[1].resource_version = 5;
  ch[2].resource_version = 6;
  EXPECT(herald_writer_apply_batch(w, ch, 3, &applied),
         HERALD_E_OUT_OF_ORDER);
  CHECK(applied == 1);
  EXPECT(herald_engine_resource_version(e, &rv), HERALD_OK);
  CHECK(rv == 5);
  /* A bad kind: none applied. */
  ch[0].resource_version = 6;
  ch[1].kind = 42;
  ch[1].resource_version = 7;
  EXPECT(herald_writer_apply_batch(w, ch, 2, NULL), HERALD_E_INVALID);
  EXPECT(herald_engine_resource_version(e, &rv), HERALD_OK);
  CHECK(rv == 5);
  herald_watch_free(wt);
  herald_writer_free(w);
  EXPECT(herald_writer_apply_batch(w, ch, 1, &applied), HERALD_E_HANDLE);
  herald_engine_free(e);
}

/* herald_engine_new_flags: unknown flags refused; with
 * HERALD_ENGINE_INLINE_DISPATCH, every watch (indexed, unindexed, in a
 * set, blocked in a wait on another thread) gets exactly its changes, in
 * order, written one by one and in batches. */
#define INLINE_CHANGES 3000
struct inline_reader {
  herald_watch wt;
  uint64_t got, last_rv;
  int bad;
};

static void *inline_read(void *arg) {
  struct inline_reader *rd = arg;
  herald_event evs[64];
  size_t n;
  herald_end end;
  for (int idle = 0; rd->got < INLINE_CHANGES && idle < 500;) {
    herald_status st = herald_watch_wait(rd->wt, evs, 64, 20, &n, &end);
    if (st != HERALD_OK && st != HERALD_PENDING) {
      rd->bad++;
      break;
    }
    idle = n ? 0 : idle + 1;
    for (size_t j = 0; j < n; j++, rd->got++) {
      if (evs[j].resource_version != rd->last_rv + 1)
        rd->bad++;
      rd->last_rv = evs[j].resource_version;
    }
  }
  return NULL;
}

static void test_inline_dispatch(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new_flags(NULL, 2, &e, &w), HERALD_E_INVALID);
  last_error_contains("unknown engine flags");
  EXPECT(herald_engine_new_flags(NULL, HERALD_ENGINE_INLINE_DISPATCH, NULL,
                                 &w),
         HERALD_E_NULL);
  herald_str indexed[1] = {S("spec.nodeName")};
  herald_config cfg = {indexed, 1, 0, 0};
  EXPECT(herald_engine_new_flags(&cfg, HERALD_ENGINE_INLINE_DISPATCH, &e, &w),
         HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  herald_watch_request r = watch_all(1);
  struct inline_reader rd = {0, 0, 1, 0};
  EXPECT(herald_watch_open(e, &r, &rd.wt), HERALD_OK);
  r.field_selector = S("spec.nodeName=n1"); /* indexed: one change in 3 */
  herald_watch node, in_set;
  EXPECT(herald_watch_open(e, &r, &node), HERALD_OK);
  r.field_selector = S("");
  herald_watch_set set;
  EXPECT(herald_watch_set_new(&set), HERALD_OK);
  EXPECT(herald_watch_open(e, &r, &in_set), HERALD_OK);
  EXPECT(herald_watch_set_add(set, in_set), HERALD_OK);
  pthread_t t;
  pthread_create(&t, NULL, inline_read, &rd);
  const char *nodes[3] = {"n1", "n2", "n3"};
  herald_change ch[10];
  uint64_t rv = 2;
  while (rv < 2 + INLINE_CHANGES) {
    if ((rv / 100) % 2 == 0) { /* one by one */
      /* One object per node (none moves out of the n1 watch's filter). */
      herald_object o = pod("ns", nodes[rv % 3], "web", nodes[rv % 3], "x");
      EXPECT(herald_writer_apply(w, rv < 5 ? HERALD_CHANGE_ADDED
                                           : HERALD_CHANGE_MODIFIED,
                                 rv, &o),
             HERALD_OK);
      rv++;
    } else { /* batches of 10 (they start at multiples of 10) */
      herald_pair fa[10][1];
      for (int j = 0; j < 10; j++, rv++) {
        ch[j].kind = HERALD_CHANGE_MODIFIED;
        ch[j].resource_version = rv;
        ch[j].object = pod("ns", nodes[rv % 3], "web", nodes[rv % 3], "x");
        fa[j][0] = ch[j].object.fields[0];
        ch[j].object.fields = fa[j];
      }
      size_t applied = 0;
      EXPECT(herald_writer_apply_batch(w, ch, 10, &applied), HERALD_OK);
      CHECK(applied == 10);
    }
  }
  pthread_join(t, NULL);
  CHECK(rd.bad == 0 && rd.got == INLINE_CHANGES &&
        rd.last_rv == 1 + INLINE_CHANGES);
  /* The indexed watch: the n1 changes only (rv % 3 == 0), in order. */
  herald_event evs[64];
  size_t n;
  herald_end end;
  uint64_t got = 0, want = 0, last = 0;
  for (uint64_t v = 2; v < 2 + INLINE_CHANGES; v++)
    want += v % 3 == 0;
  for (int idle = 0; got < want && idle < 500;) {
    herald_status st = herald_watch_wait(node, evs, 64, 20, &n, &end);
    CHECK(st == HERALD_OK || st == HERALD_PENDING);
    idle = n ? 0 : idle + 1;
    for (size_t j = 0; j < n; j++, got++) {
      CHECK(evs[j].resource_version % 3 == 0 &&
            evs[j].resource_version > last);
      last = evs[j].resource_version;
    }
  }
  CHECK(got == want);
  /* The watch in the set: reported ready, then every change (polled). */
  CHECK(readable(set, 5000));
  herald_watch ready[2];
  size_t nr = 0;
  EXPECT(herald_watch_set_ready(set, ready, 2, &nr), HERALD_OK);
  CHECK(nr == 1 && ready[0] == in_set);
  got = 0;
  last = 1;
  for (int idle = 0; got < INLINE_CHANGES && idle < 500;) {
    herald_status st = herald_watch_poll(in_set, evs, 64, &n, &end);
    CHECK(st == HERALD_OK || st == HERALD_PENDING);
    idle = n ? 0 : idle + 1;
    if (!n)
      usleep(20000);
    for (size_t j = 0; j < n; j++, got++) {
      CHECK(evs[j].resource_version == last + 1);
      last = evs[j].resource_version;
    }
  }
  CHECK(got == INLINE_CHANGES);
  herald_stats st;
  EXPECT(herald_engine_stats(e, &st), HERALD_OK);
  CHECK(st.changes_received >= INLINE_CHANGES);
  herald_watch_free(rd.wt);
  herald_watch_free(node);
  herald_watch_free(in_set);
  herald_watch_set_free(set);
  herald_writer_free(w);
  herald_engine_free(e);
}

/* A stop from another thread ends a wait blocked on the watch. */
static void *stopper(void *arg) {
  usleep(50000);
  herald_watch_stop(*(herald_watch *)arg);
  return NULL;
}

static void test_stop_from_another_thread(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  herald_watch_request r = watch_all(1);
  herald_watch wt;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  pthread_t t;
  pthread_create(&t, NULL, stopper, &wt);
  herald_event evs[4];
  size_t n;
  herald_end end;
  EXPECT(herald_watch_wait(wt, evs, 4, UINT64_MAX, &n, &end), HERALD_OK);
  CHECK(end.reason == HERALD_END_STOPPED);
  pthread_join(t, NULL);
  herald_watch_free(wt);
  herald_writer_free(w);
  herald_engine_free(e);
}

/* Views of objects above the copy threshold (kept by reference) and
 * below it (copied), mixed in one batch: each view holds its own bytes
 * until the next call. */
static void test_views_small_and_large(void) {
  herald_engine e;
  herald_writer w;
  EXPECT(herald_engine_new(NULL, &e, &w), HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  herald_watch_request r = watch_all(1);
  herald_watch wt;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  static char big[4096];
  memset(big, 'x', sizeof big - 1);
  for (uint64_t i = 0; i < 8; i++) {
    char name[16];
    snprintf(name, sizeof name, "p%llu", (unsigned long long)i);
    big[0] = (char)('a' + i);
    herald_object o = pod("ns", name, "web", "n1", i % 2 ? big : "small");
    EXPECT(herald_writer_apply(w, HERALD_CHANGE_ADDED, 2 + i, &o), HERALD_OK);
  }
  herald_event evs[8];
  size_t got = 0, n;
  herald_end end;
  herald_event all[8];
  while (got < 8) {
    EXPECT(herald_watch_wait(wt, evs, 8, 10000, &n, &end), HERALD_OK);
    if (n == 0)
      break;
    /* Check this batch's views now: they end at the next call. */
    for (size_t j = 0; j < n; j++, got++) {
      all[got] = evs[j];
      char want[16];
      snprintf(want, sizeof want, "ns/p%zu", got);
      CHECK(bytes_eq(evs[j].key, want));
      if (got % 2) {
        CHECK(evs[j].payload.len == sizeof big - 1);
        CHECK(evs[j].payload.ptr[0] == 'a' + (int)got);
        CHECK(evs[j].payload.ptr[sizeof big - 2] == 'x');
      } else {
        CHECK(bytes_eq(evs[j].payload, "small"));
      }
    }
  }
  CHECK(got == 8);
  (void)all;
  herald_watch_free(wt);
  herald_writer_free(w);
  herald_engine_free(e);
}

/* Views stay valid while the writer races on and the history (the
 * smallest ring: two chunks) replaces the chunks the batch was lent from:
 * each view's bytes are checked after the call returns and after the
 * writer has moved past them. Under ASan and valgrind a view into freed
 * memory fails here. */
struct racer {
  herald_writer w;
  uint64_t last;
  volatile int started; /* the consumer has its first batch */
};

static void *race_writer(void *arg) {
  struct racer *r = arg;
  char payload[64];
  for (uint64_t rv = 2; rv <= r->last; rv++) {
    snprintf(payload, sizeof payload, "payload-%llu", (unsigned long long)rv);
    herald_object o = pod("ns", "a", "web", "n1", payload);
    herald_writer_apply(r->w, rv == 2 ? HERALD_CHANGE_ADDED
                                      : HERALD_CHANGE_MODIFIED,
                        rv, &o);
    /* The first change waits for the consumer (a slow one, under
     * valgrind, would otherwise fall out of the history at once). */
    while (rv == 2 && !__atomic_load_n(&r->started, __ATOMIC_ACQUIRE))
      usleep(100);
  }
  return NULL;
}

static void test_views_survive_the_history_moving_on(void) {
  herald_engine e;
  herald_writer w;
  herald_config cfg;
  memset(&cfg, 0, sizeof cfg);
  cfg.history_lower = 1;
  cfg.history_upper = 1;
  EXPECT(herald_engine_new(&cfg, &e, &w), HERALD_OK);
  EXPECT(herald_writer_replace(w, NULL, 0, 1), HERALD_OK);
  herald_watch_request r = watch_all(1);
  herald_watch wt;
  EXPECT(herald_watch_open(e, &r, &wt), HERALD_OK);
  struct racer rc = {w, 20000, 0};
  pthread_t t;
  pthread_create(&t, NULL, race_writer, &rc);
  herald_event evs[256];
  size_t n;
  herald_end end;
  uint64_t seen = 0;
  for (;;) {
    herald_status st = herald_watch_wait(wt, evs, 256, 10000, &n, &end);
    if (st != HERALD_OK || end.reason != HERALD_END_NONE)
      break; /* fell out of the tiny history: fine, views were checked */
    __atomic_store_n(&rc.started, 1, __ATOMIC_RELEASE);
    usleep(2000); /* let the writer move on past this batch */
    for (size_t j = 0; j < n; j++) {
      char want[64];
      snprintf(want, sizeof want, "payload-%llu",
               (unsigned long long)evs[j].resource_version);
      if (!bytes_eq(evs[j].payload, want) || !bytes_eq(evs[j].key, "ns/a")) {
        fprintf(stderr, "a view changed under its batch at %llu\n",
                (unsigned long long)evs[j].resource_version);
        failures++;
        break;
      }
      seen++;
    }
    if (seen && evs[n ? n - 1 : 0].resource_version >= rc.last)
      break;
  }
  pthread_join(t, NULL);
  CHECK(seen > 0);
  herald_watch_free(wt);
  herald_writer_free(w);
  herald_engine_free(e);
}

int main(void) {
  test_write_and_read();
  test_watch();
  test_gone();
  test_hostile_arguments();
  test_threads_and_a_set();
  use_arming = 1;
  test_threads_and_a_set();
  use_arming = 0;
  test_poll_arming();
  test_apply_batch();
  test_inline_dispatch();
  test_stop_from_another_thread();
  test_views_small_and_large();
  test_views_survive_the_history_moving_on();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  printf("herald C ABI: all checks passed\n");
  return 0;
}
