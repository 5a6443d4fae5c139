/* The `tlbpack` command: verbs share these helpers (cli.c). Exit codes are part of the contract:
 * 0 success, 1 failure, 2 usage error, 3 pool reserve got fewer pages than asked. */
#ifndef TLBPACK_CLI_H
#define TLBPACK_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TPC_EXIT_FAIL 1
#define TPC_EXIT_USAGE 2
#define TPC_EXIT_PARTIAL 3

int tpc_cmd_run(int argc, char **argv);
int tpc_cmd_pool(int argc, char **argv);
int tpc_cmd_compare(int argc, char **argv);
int tpc_cmd_profile(int argc, char **argv);

/* Prints "tlbpack VERB: MESSAGE" and a hint to --help on stderr; returns TPC_EXIT_USAGE. */
int tpc_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints "tlbpack VERB: MESSAGE" on stderr; returns TPC_EXIT_FAIL. */
int tpc_fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Directory holding the running executable (no trailing slash), or NULL. */
const char *tpc_self_dir(void);
/* Absolute path of libtlbpack.so for preloading: `explicit_path` if given, else next to the
 * executable (build tree), else the installed libdir. Returns 0 and fills `out`, or -1 after
 * printing which paths were tried. */
int tpc_find_lib(const char *verb, const char *explicit_path, char *out, size_t outsz);
/* Nonzero when path starts with the ELF magic (a library LD_PRELOAD can load). */
int tpc_is_elf(const char *path);
/* Finds a helper executable (tlbsim): next to this one, then the installed bindir, then PATH. */
int tpc_find_tool(const char *name, char *out, size_t outsz);

/* Parses "256M", "1G", "512KiB", "4096B" into bytes (*is_bytes = 1) or a bare count "128"
 * (*is_bytes = 0). Returns 0, or -1 when the text is not one of those forms. */
int tpc_parse_size(const char *s, uint64_t *value, int *is_bytes);
/* Parses a page size: "2M", "2m", "1G", "2048kB", "2097152". Returns bytes or 0. */
uint64_t tpc_parse_page_size(const char *s);
/* "2 MiB", "1 GiB", "512 KiB": exact binary units when they divide, else bytes. */
const char *tpc_fmt_bytes(uint64_t bytes, char *buf, size_t bufsz);

/* Reads a small file into buf (NUL-terminated, trailing newline removed); -1 with errno. */
int tpc_read_file(const char *path, char *buf, size_t bufsz);
/* Reads a decimal integer from a file; -1 with errno. */
int tpc_read_long(const char *path, long *out);
/* Writes "value\n" to a sysfs/procfs file; -1 with errno. */
int tpc_write_long(const char *path, long value);

/* Checks one TLBPACK_CONF list "k:v,k:v" against the keys the allocator documents.
 * Returns 0, or prints what is wrong (naming the item and what is accepted) and returns -1. */
int tpc_conf_check(const char *verb, const char *conf);
/* Prints every TLBPACK_CONF key with its values ("stats:0|1|text|json", "retain_mb:N"), from
 * the allocator's own table, as many on a line as fit in `width` columns, indented by `indent`. */
void tpc_conf_keys_help(FILE *out, int indent, int width);
/* Nonzero when the conf list sets `key`. */
int tpc_conf_has(const char *conf, const char *key);

#endif
