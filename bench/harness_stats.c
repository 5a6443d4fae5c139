/* Summary maths: medians, spread and ratios. NaN means "not measured" and is skipped. */
#include "harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double tb_median(const double *v, size_t n) {
  double tmp[256];
  size_t k = 0;
  for (size_t i = 0; i < n && k < 256; i++)
    if (!isnan(v[i])) tmp[k++] = v[i];
  if (!k) return NAN;
  qsort(tmp, k, sizeof *tmp, cmp_d);
  return k % 2 ? tmp[k / 2] : (tmp[k / 2 - 1] + tmp[k / 2]) / 2.0;
}

double tb_min(const double *v, size_t n) {
  double m = NAN;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i]) && (isnan(m) || v[i] < m)) m = v[i];
  return m;
}

double tb_max(const double *v, size_t n) {
  double m = NAN;
  for (size_t i = 0; i < n; i++)
    if (!isnan(v[i]) && (isnan(m) || v[i] > m)) m = v[i];
  return m;
}

double tb_spread_pct(const double *v, size_t n) {
  double med = tb_median(v, n);
  if (isnan(med) || med == 0) return NAN;
  return (tb_max(v, n) - tb_min(v, n)) / med * 100.0;
}

double tb_ratio(double a, double b) {
  if (isnan(a) || isnan(b) || b == 0) return NAN;
  return a / b;
}
