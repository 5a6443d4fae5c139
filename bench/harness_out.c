/* Small writers: CSV fields and rows, number formatting. */
#include "harness.h"

#include <math.h>
#include <string.h>

void tb_csv_field(FILE *f, const char *s) {
  if (!s) s = "";
  size_t n = strlen(s);
  int quote = n && (s[0] == ' ' || s[n - 1] == ' ');
  for (const char *p = s; *p && !quote; p++)
    if (*p == ',' || *p == '"' || *p == '\n' || *p == '\r') quote = 1;
  if (!quote) { fputs(s, f); return; }
  fputc('"', f);
  for (const char *p = s; *p; p++) {
    if (*p == '"') fputc('"', f);
    fputc(*p, f);
  }
  fputc('"', f);
}

void tb_csv_row(FILE *f, const char *const *fields, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i) fputc(',', f);
    tb_csv_field(f, fields[i]);
  }
  fputc('\n', f);
}

const char *tb_fmt(char *buf, size_t n, double v, int decimals) {
  if (isinf(v) && v > 0) snprintf(buf, n, "inf");
  else if (isnan(v) || isinf(v)) snprintf(buf, n, "n/a");
  else snprintf(buf, n, "%.*f", decimals, v);
  return buf;
}
