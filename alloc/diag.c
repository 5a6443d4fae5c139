/* Messages to stderr: one write(2) each, never through stdio, so any layer may report from
 * inside malloc or with a lock held; _tp_fatal aborts after its message. */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "base.h"

static void vmessage(const char *fmt, va_list ap) {
  char buf[512];
  int n = snprintf(buf, sizeof buf, "tlbpack: ");
  n += vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  if (n > (int)sizeof buf - 2) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

void _tp_message(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
}

void _tp_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  abort();
}
