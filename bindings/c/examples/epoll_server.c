/* An epoll loop serving many Herald watches from one thread, as a C
 * server embeds it: one watch set, one descriptor in epoll, and only the
 * watches the engine woke are polled. A writer thread applies changes
 * (flat out, or paced with --rate), each payload carrying its send time;
 * the loop checks every watch's order and reports deliveries/s and the
 * latency from the write to the loop's receipt.
 *
 *   epoll_server [--watches N] [--changes M] [--rate CHANGES_PER_S]
 *                [--payload BYTES]   (at least 8: the send time, then padding)
 *
 * The last line is machine-readable: key=value pairs. */

#include "herald.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  char msg[512];
  herald_last_error(msg, sizeof msg);
  fprintf(stderr, "epoll_server: %s: %s\n", what, msg);
  exit(1);
}

struct writer_args {
  herald_writer w;
  uint64_t changes;
  double rate; /* changes per second; 0: flat out */
  size_t payload; /* bytes per payload, at least 8 */
};

/* Applies changes at versions 2..changes+1 to one pod; the payload is the
 * send time in nanoseconds, as 8 bytes. */
static void *write_changes(void *arg) {
  struct writer_args *a = arg;
  herald_pair label = {{"app", 3}, {"web", 3}};
  uint8_t *buf = calloc(a->payload, 1);
  uint64_t start = now_ns();
  for (uint64_t i = 0; i < a->changes; i++) {
    if (a->rate > 0) {
      uint64_t due = start + (uint64_t)((double)i * 1e9 / a->rate);
      while (now_ns() < due) {
        uint64_t left = due - now_ns();
        if (left > 200000) {
          struct timespec ts = {0, (long)(left - 100000)};
          nanosleep(&ts, NULL);
        }
      }
    }
    uint64_t sent = now_ns();
    herald_object o;
    memset(&o, 0, sizeof o);
    o.namespace_.ptr = "default";
    o.namespace_.len = 7;
    o.name.ptr = "pod-0";
    o.name.len = 5;
    o.labels = &label;
    o.labels_len = 1;
    memcpy(buf, &sent, sizeof sent);
    o.payload.ptr = buf;
    o.payload.len = a->payload;
    if (herald_writer_apply(a->w, i == 0 ? HERALD_CHANGE_ADDED
                                         : HERALD_CHANGE_MODIFIED,
                            2 + i, &o) != HERALD_OK)
      die("apply");
  }
  free(buf);
  return NULL;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Latency is sampled on this many watches (every event of each). */
#define SAMPLED 10

int main(int argc, char **argv) {
  size_t watches = 1000;
  uint64_t changes = 20000;
  double rate = 0;
  size_t payload = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--watches"))
      watches = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--changes"))
      changes = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--rate"))
      rate = strtod(argv[i + 1], NULL);
    else if (!strcmp(argv[i], "--payload"))
      payload = strtoull(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: %s [--watches N] [--changes M] [--rate R] [--payload B]\n",
              argv[0]);
      return 2;
    }
  }
  if (payload < 8)
    payload = 8;
  if (watches == 0 || changes == 0) {
    fprintf(stderr, "epoll_server: --watches and --changes must be >= 1\n");
    return 2;
  }

  herald_engine engine;
  herald_writer writer;
  if (herald_engine_new(NULL, &engine, &writer) != HERALD_OK)
    die("engine");
  if (herald_writer_replace(writer, NULL, 0, 1) != HERALD_OK)
    die("replace");

  herald_watch_set set;
  int fd;
  if (herald_watch_set_new(&set) != HERALD_OK ||
      herald_watch_set_fd(set, &fd) != HERALD_OK)
    die("watch set");
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event reg = {.events = EPOLLIN};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &reg) != 0) {
    perror("epoll");
    return 1;
  }

  /* Watches of everything from version 1, and what each expects next.
   * A handle is looked up by a small open-addressing table. */
  herald_watch *handles = calloc(watches, sizeof *handles);
  uint64_t *next = calloc(watches, sizeof *next);
  size_t slots = 1;
  while (slots < 2 * watches)
    slots <<= 1;
  herald_watch *keys = calloc(slots, sizeof *keys);
  size_t *vals = calloc(slots, sizeof *vals);
  herald_watch_request req;
  memset(&req, 0, sizeof req);
  req.resource_version = 1;
  req.flags = HERALD_HAS_RESOURCE_VERSION;
  for (size_t i = 0; i < watches; i++) {
    if (herald_watch_open(engine, &req, &handles[i]) != HERALD_OK ||
        herald_watch_set_add(set, handles[i]) != HERALD_OK)
      die("watch");
    next[i] = 2;
    size_t s = (size_t)(handles[i] * 0x9E3779B97F4A7C15ull) & (slots - 1);
    while (keys[s])
      s = (s + 1) & (slots - 1);
    keys[s] = handles[i];
    vals[s] = i;
  }

  size_t max_samples = SAMPLED * (size_t)changes;
  uint64_t *lat = malloc(max_samples * sizeof *lat);
  size_t n_lat = 0;
  uint64_t delivered = 0, owed = (uint64_t)watches * changes, errors = 0;
  volatile uint64_t seen = 0;
  uint64_t polls = 0;

  struct writer_args wa = {writer, changes, rate, payload};
  pthread_t wt;
  uint64_t t0 = now_ns();
  pthread_create(&wt, NULL, write_changes, &wa);

  herald_watch ready[256];
  herald_event evs[64];
  while (delivered < owed) {
    struct epoll_event ev;
    int got = epoll_wait(ep, &ev, 1, 10000);
    if (got == 0) {
      fprintf(stderr, "epoll_server: nothing for 10 s at %llu of %llu\n",
              (unsigned long long)delivered, (unsigned long long)owed);
      return 1;
    }
    if (got < 0)
      continue;
    size_t nr;
    if (herald_watch_set_ready(set, ready, 256, &nr) != HERALD_OK)
      die("ready");
    for (size_t k = 0; k < nr; k++) {
      size_t s = (size_t)(ready[k] * 0x9E3779B97F4A7C15ull) & (slots - 1);
      while (keys[s] != ready[k])
        s = (s + 1) & (slots - 1);
      size_t i = vals[s];
      /* One poll per report: a watch that had events is reported again
       * (it may have more); one that had none is armed. */
      {
        size_t n;
        herald_end end;
        herald_status st = herald_watch_poll(ready[k], evs, 64, &n, &end);
        polls++;
        if (st == HERALD_PENDING)
          continue;
        if (st != HERALD_OK)
          die("poll");
        if (end.reason != HERALD_END_NONE) {
          fprintf(stderr, "epoll_server: watch %zu ended (%d)\n", i,
                  end.reason);
          return 1;
        }
        uint64_t at = now_ns();
        for (size_t j = 0; j < n; j++) {
          /* What a consumer does at least: look at the key and payload. */
          seen += (evs[j].key.len ? evs[j].key.ptr[0] : 0) +
                  (evs[j].payload.len ? evs[j].payload.ptr[0] : 0);
          errors += evs[j].resource_version != next[i];
          next[i] = evs[j].resource_version + 1;
          if (i < SAMPLED && evs[j].payload.len >= 8 && n_lat < max_samples) {
            uint64_t sent;
            memcpy(&sent, evs[j].payload.ptr, 8);
            lat[n_lat++] = at - sent;
          }
        }
        delivered += n;
      }
    }
  }
  uint64_t t1 = now_ns();
  pthread_join(wt, NULL);

  qsort(lat, n_lat, sizeof *lat, cmp_u64);
  double secs = (double)(t1 - t0) / 1e9;
  double p50 = n_lat ? (double)lat[n_lat / 2] / 1e3 : 0;
  double p99 = n_lat ? (double)lat[(size_t)((double)n_lat * 0.99)] / 1e3 : 0;
  fprintf(stderr, "polls: %llu, %.1f events per poll\n", (unsigned long long)polls,
          (double)delivered / (double)(polls ? polls : 1));
  printf("served %zu watches from one epoll loop: %llu deliveries in %.3f s, "
         "%llu out of order\n",
         watches, (unsigned long long)delivered, secs,
         (unsigned long long)errors);
  printf("payload=%zu watches=%zu changes=%llu delivered=%llu seconds=%.6f "
         "deliveries_per_s=%.0f p50_us=%.1f p99_us=%.1f errors=%llu\n",
         payload, watches, (unsigned long long)changes,
         (unsigned long long)delivered, secs, (double)delivered / secs, p50, p99, (unsigned long long)errors);

  for (size_t i = 0; i < watches; i++)
    herald_watch_free(handles[i]);
  herald_watch_set_free(set);
  herald_writer_free(writer);
  herald_engine_stop(engine);
  herald_engine_free(engine);
  close(ep);
  free(handles);
  free(next);
  free(keys);
  free(vals);
  free(lat);
  return errors != 0;
}
