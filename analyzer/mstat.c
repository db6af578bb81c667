/* mstat.c - summary statistics of one (uid, context, metric) over the
 * profiles of a merge (analyzer.h, docs/ANALYZER.md).
 *
 * The statistics are those of the HPCToolkit manual's metric chapter
 * (Sum, Min, Mean, Max, StdDev, CoefVar over the threads/processes of an
 * execution), with a profile that has no value counting as 0 -- values
 * are stored sparsely, so "absent" and "zero" are the same thing.
 */
#include <math.h>

#include "analyzer.h"

void gpd_mstat_compute(gpd_mstat_t *s, const gpd_cval_rec_t *vals, size_t nz, const uint32_t *profs, size_t n) {
  double sum = 0, min = 0, max = 0, m2 = 0;
  uint32_t minp = 0, maxp = 0, zero_p = 0;
  s->n = n;
  s->nz = nz;
  /* the first profile of the uid without a value (it holds 0) */
  if (nz < n) {
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
      if (j < nz && vals[j].prof == profs[i]) {
        j++;
        continue;
      }
      zero_p = profs[i];
      break;
    }
  }
  for (size_t i = 0; i < nz; i++) {
    double v = vals[i].v;
    sum += v;
    if (i == 0 || v < min) min = v, minp = vals[i].prof;
    if (i == 0 || v > max) max = v, maxp = vals[i].prof;
  }
  if (nz < n) { /* zeros take part: lowest profile id wins ties */
    if (nz == 0 || min > 0 || (min == 0 && zero_p < minp)) min = 0, minp = zero_p;
    if (nz == 0 || max < 0 || (max == 0 && zero_p < maxp)) max = 0, maxp = zero_p;
  }
  double mean = n ? sum / (double)n : 0;
  for (size_t i = 0; i < nz; i++) m2 += (vals[i].v - mean) * (vals[i].v - mean);
  m2 += (double)(n - nz) * mean * mean; /* the zeros */
  s->sum = sum;
  s->min = min;
  s->max = max;
  s->mean = mean;
  s->stddev = n ? sqrt(m2 / (double)n) : 0;
  s->cv = mean != 0 ? s->stddev / fabs(mean) : 0;
  s->min_profile = minp;
  s->max_profile = maxp;
}
