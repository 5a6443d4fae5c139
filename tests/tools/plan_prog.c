/* A program for the profile/plan tests: records of three parts from three sites (node, key,
 * value), a cold buffer beside each record (written once, never read), then dependent lookups
 * over the records. Prints, for the test to check, the addresses of one record's parts and of
 * one cold buffer. With ONE, a record's three parts come from one helper (one call site).
 * Usage: plan_prog [RECORDS] [LOOKUPS] [SEED] [ONE] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rec_s {
  struct rec_s *next;
  char *key;
  uint64_t *val;
  uint64_t pad[5];
} rec_t;

static __attribute__((noinline)) rec_t *new_node(void) { return malloc(sizeof(rec_t)); }
static __attribute__((noinline)) char *new_key(size_t n) { return malloc(n); }
static __attribute__((noinline)) uint64_t *new_val(void) { return malloc(128); }
static __attribute__((noinline)) char *new_cold(size_t n) { return malloc(n); }
/* not a tail call: the blocks' return address is in new_any, one site whatever the caller */
static __attribute__((noinline)) void *new_any(size_t n) {
  void *p = malloc(n);
  if (p == NULL) abort();
  return p;
}

int main(int argc, char **argv) {
  unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 4000;
  unsigned long lookups = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000;
  srand(argc > 3 ? (unsigned)atoi(argv[3]) : 1);
  int one = argc > 4 && !strcmp(argv[4], "one");
  rec_t **all = malloc(n * sizeof *all);
  char **cold = malloc(n * sizeof *cold);
  for (unsigned long i = 0; i < n; i++) {
    rec_t *r = one ? new_any(sizeof(rec_t)) : new_node();
    size_t klen = 16 + (size_t)(rand() % 32);
    r->key = one ? new_any(klen) : new_key(klen);
    snprintf(r->key, 16, "k%lu", i % 100000000);
    r->val = one ? new_any(128) : new_val();
    for (int j = 0; j < 16; j++) r->val[j] = i * 16 + (uint64_t)j;
    cold[i] = new_cold(512);
    memset(cold[i], 1, 512);
    all[i] = r;
  }
  for (unsigned long i = 0; i < n; i++) all[i]->next = all[(unsigned long)rand() % n];
  rec_t *r = all[0];
  uint64_t sum = 0;
  for (unsigned long i = 0; i < lookups; i++) {
    sum += (uint64_t)r->key[1] + r->val[sum & 15];
    r = r->next;
  }
  printf("sum %llu\n", (unsigned long long)sum);
  printf("node %p key %p val %p cold %p\n", (void *)all[n / 2], (void *)all[n / 2]->key, (void *)all[n / 2]->val,
         (void *)cold[n / 2]);
  return 0;
}
