/* The lane kernel's body: nuclear norms of many small float64 matrices, one matrix per SIMD lane.
 *
 * Included once per instruction set by _lanes.c, with LANES_NAME(x) naming the functions of that copy and the
 * compiler's target set by a pragma around the include, so that one build carries an AVX-512, an AVX2 and a
 * portable copy and _lanes.c picks one at run time. Nothing here is specific to an instruction set: the inner
 * loops run over lanes (the last, contiguous index of every workspace array), and the compiler turns each of them
 * into vector instructions of the width the target has. Every branch that differs between lanes is written as a
 * select between two computed values, so that the loops stay straight-line code.
 *
 * For each group of BW matrices: scale each by a power of two (exact) so its largest entry lies in [0.5, 1);
 * reduce it to an upper bidiagonal matrix by Householder reflections from the left and the right (Golub and
 * Kahan 1965; Golub and Van Loan, Matrix Computations, Algorithm 5.4.2). For each chunk of QW such bidiagonals:
 * implicit-shift QR sweeps on the bidiagonal (Demmel and Kahan 1990; LAPACK dbdsqr), each lane on its own
 * unreduced bottom block, until every off-diagonal entry is below eps times the lane's largest entry. The sum
 * of the absolute diagonal is the nuclear norm; a lane that has not converged within max_sweeps sweeps is
 * flagged, and the caller takes that matrix's singular values from LAPACK instead.
 */

static inline void LANES_NAME(reflect_columns)(double *A, const double *v, const double *tau, int k, int m,
                                                int n, int j0, int nc) {
    /* Columns j0 .. j0+nc-1 of A, rows k .. m-1, times H = I - tau v v^T (v[k] = 1): nc independent sums, each
     * a vector of BW lanes (lanes_v, so that the compiler vectorises over lanes and nothing else). */
    lanes_v w[4], t = *(const lanes_v *)tau;
    for (int c = 0; c < nc; c++) w[c] = *(const lanes_v *)(A + ((size_t)k * n + j0 + c) * BW);
    for (int i = k + 1; i < m; i++) {
        const lanes_v *a = (const lanes_v *)(A + ((size_t)i * n + j0) * BW), vi = *(const lanes_v *)(v + (size_t)i * BW);
        for (int c = 0; c < nc; c++) w[c] += vi * a[c];
    }
    for (int c = 0; c < nc; c++) {
        w[c] *= t;
        *(lanes_v *)(A + ((size_t)k * n + j0 + c) * BW) -= w[c];
    }
    for (int i = k + 1; i < m; i++) {
        lanes_v *a = (lanes_v *)(A + ((size_t)i * n + j0) * BW), vi = *(const lanes_v *)(v + (size_t)i * BW);
        for (int c = 0; c < nc; c++) a[c] -= vi * w[c];
    }
}

static inline void LANES_NAME(reflect_rows)(double *A, const double *u, const double *tau, int k, int n, int i0,
                                             int nr) {
    /* Rows i0 .. i0+nr-1 of A, columns k+1 .. n-1, times H = I - tau u u^T (u[k+1] = 1): nr independent sums. */
    lanes_v w[4], t = *(const lanes_v *)tau;
    for (int c = 0; c < nr; c++) w[c] = *(const lanes_v *)(A + ((size_t)(i0 + c) * n + k + 1) * BW);
    for (int j = k + 2; j < n; j++) {
        lanes_v uj = *(const lanes_v *)(u + (size_t)j * BW);
        for (int c = 0; c < nr; c++) w[c] += uj * *(const lanes_v *)(A + ((size_t)(i0 + c) * n + j) * BW);
    }
    for (int c = 0; c < nr; c++) {
        lanes_v *a = (lanes_v *)(A + (size_t)(i0 + c) * n * BW);
        w[c] *= t;
        a[k + 1] -= w[c];
        for (int j = k + 2; j < n; j++) a[j] -= *(const lanes_v *)(u + (size_t)j * BW) * w[c];
    }
}

static inline void LANES_NAME(householder)(const double *x0, const double *s, double *beta, double *tau,
                                            double *scal) {
    /* Per lane, the reflector taking (x0, x) with |x|^2 = s to (beta, 0): H = I - tau v v^T, v = (1, scal x),
     * beta = -sign(x0) sqrt(x0^2 + s) (LAPACK dlarfg); the identity (tau = 0, beta = x0) when x = 0. */
    for (int l = 0; l < BW; l++) {
        double nrm = sqrt(x0[l] * x0[l] + s[l]);
        int reflect = s[l] > 0.0;
        double b = reflect ? (x0[l] >= 0.0 ? -nrm : nrm) : x0[l];
        double denom = reflect ? x0[l] - b : 1.0;
        tau[l] = reflect ? (b - x0[l]) / b : 0.0;
        scal[l] = reflect ? 1.0 / denom : 0.0;
        beta[l] = b;
    }
}

static void LANES_NAME(bidiagonalize)(double *A, double *work, int m, int n, double *D, double *E) {
    /* A: (m, n, BW) with m >= n, destroyed; D, E: the bidiagonal's diagonal and superdiagonal, (n, QW) each,
     * written at lane offset 0 (the caller offsets the pointers). work: (m + n) BW doubles of scratch. The
     * reflectors are applied to four columns (rows) at a time, so that four sums run side by side. */
    double *v = work, *u = v + (size_t)m * BW;
    double x0[BW], s[BW], beta[BW], tau[BW], scal[BW];
    for (int k = 0; k < n; k++) {
        /* Left reflector: zero column k below the diagonal. */
        for (int l = 0; l < BW; l++) {
            s[l] = 0.0;
            x0[l] = A[((size_t)k * n + k) * BW + l];
        }
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * BW;
            for (int l = 0; l < BW; l++) s[l] += a[l] * a[l];
        }
        LANES_NAME(householder)(x0, s, beta, tau, scal);
        for (int l = 0; l < BW; l++) D[(size_t)k * QW + l] = beta[l];
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * BW;
            for (int l = 0; l < BW; l++) v[(size_t)i * BW + l] = a[l] * scal[l];
        }
        int j = k + 1;
        for (; j + 4 <= n; j += 4) LANES_NAME(reflect_columns)(A, v, tau, k, m, n, j, 4);
        for (; j < n; j++) LANES_NAME(reflect_columns)(A, v, tau, k, m, n, j, 1);
        if (k >= n - 1) break;
        /* Right reflector: zero row k right of the superdiagonal. */
        const double *row = A + (size_t)k * n * BW;
        for (int l = 0; l < BW; l++) {
            s[l] = 0.0;
            x0[l] = row[(size_t)(k + 1) * BW + l];
        }
        for (int jj = k + 2; jj < n; jj++)
            for (int l = 0; l < BW; l++) s[l] += row[(size_t)jj * BW + l] * row[(size_t)jj * BW + l];
        LANES_NAME(householder)(x0, s, beta, tau, scal);
        for (int l = 0; l < BW; l++) E[(size_t)k * QW + l] = beta[l];
        if (k + 2 >= n) continue; /* a reflector of length one is the identity */
        for (int jj = k + 2; jj < n; jj++)
            for (int l = 0; l < BW; l++) u[(size_t)jj * BW + l] = row[(size_t)jj * BW + l] * scal[l];
        int i = k + 1;
        for (; i + 4 <= m; i += 4) LANES_NAME(reflect_rows)(A, u, tau, k, n, i, 4);
        for (; i < m; i++) LANES_NAME(reflect_rows)(A, u, tau, k, n, i, 1);
    }
}

#define LANES_MAX(a, b) ((a) > (b) ? (a) : (b))
#define LANES_MIN(a, b) ((a) < (b) ? (a) : (b))

static void LANES_NAME(bidiagonal_sweeps)(double *D, double *E, int n, int max_sweeps, unsigned char *failed) {
    /* D: (n, QW) diagonal; E: (n + 2, QW) superdiagonal with a zero row before (E[-1]) and after (E[n - 1], E[n]).
     * On return D holds each lane's singular values (up to sign); failed[l] = 1 for a lane that did not converge.
     * Each lane works on its bottom unreduced block, rows lo .. hi-1; the bookkeeping (deflation, the block's
     * top, the shift) is itself done for all lanes at once, with indices kept as doubles so that every loop
     * runs on vectors of one width. An off-diagonal entry at most thr = eps * (the lane's largest entry) is
     * negligible: it is left in place and the block ends above it (its rotation by the next sweep only shrinks
     * it, and the bulge it would create, as small, is dropped). */
    double thr[QW], lo[QW], hi[QW], f0[QW], g0[QW], f[QW], g[QW], sweeps[QW], bad[QW];
    for (int l = 0; l < QW; l++) thr[l] = 0.0;
    for (int k = 0; k < n; k++)
        for (int l = 0; l < QW; l++) {
            double a = fabs(D[(size_t)k * QW + l]), b = fabs(E[(size_t)k * QW + l]);
            thr[l] = LANES_MAX(thr[l], LANES_MAX(a, b));
        }
    for (int l = 0; l < QW; l++) {
        thr[l] *= DBL_EPSILON;
        hi[l] = n;
        sweeps[l] = bad[l] = f[l] = g[l] = 0.0;
    }
    const double cap = max_sweeps;
    for (;;) {
        /* Deflate: the block ends above a negligible E[hi-2], as often as there is one. */
        for (int any = 1; any;) {
            any = 0;
            for (int l = 0; l < QW; l++) {
                double h = hi[l];
                long ih = h >= 2.0 ? (long)h - 2 : -1;
                int deflate = (h > 1.0) & (fabs(E[ih * QW + l]) <= thr[l]);
                hi[l] = deflate ? h - 1.0 : h;
                any |= deflate;
            }
        }
        for (int l = 0; l < QW; l++) {
            int live = hi[l] > 1.0, over = live & (sweeps[l] >= cap);
            bad[l] = over ? 1.0 : bad[l];
            hi[l] = over ? 0.0 : hi[l];
            live = live & !over;
            sweeps[l] += live ? 1.0 : 0.0;
            lo[l] = live ? hi[l] - 2.0 : -1.0;
        }
        /* The block's top: lo goes up while the entry above it is not negligible. */
        for (int k = n - 2; k >= 1; k--) {
            const double kk = k, *Ea = E + (size_t)(k - 1) * QW;
            for (int l = 0; l < QW; l++) {
                int up = (lo[l] == kk) & (fabs(Ea[l]) > thr[l]);
                lo[l] = up ? kk - 1.0 : lo[l];
            }
        }
        /* Shift: the smaller singular value of the block's trailing 2 x 2 (LAPACK dlas2), as in dbdsqr; zero
         * when it is negligible against the block's first diagonal entry. Both branches computed, one kept. */
        double kmin = n, kmax = -1.0;
        for (int l = 0; l < QW; l++) {
            int live = lo[l] >= 0.0;
            long h = live ? (long)hi[l] : 2, b = live ? (long)lo[l] : 0;
            double fa = fabs(D[(h - 2) * QW + l]), ga = fabs(E[(h - 2) * QW + l]), ha = fabs(D[(h - 1) * QW + l]);
            double fhmn = LANES_MIN(fa, ha), fhmx = LANES_MAX(fa, ha);
            double sx = fhmx > 0.0 ? fhmx : 1.0, sg = ga > 0.0 ? ga : 1.0;
            double as = 1.0 + fhmn / sx, at = (fhmx - fhmn) / sx, au = (ga / sx) * (ga / sx);
            double small_g = fhmn * (2.0 / (sqrt(as * as + au) + sqrt(at * at + au)));
            double av = fhmx / sg;
            double cv = 1.0 / (sqrt(1.0 + (as * av) * (as * av)) + sqrt(1.0 + (at * av) * (at * av)));
            double large_g = av == 0.0 ? (fhmn * fhmx) / sg : 2.0 * ((fhmn * cv) * av);
            double shift = fhmn == 0.0 ? 0.0 : (ga < fhmx ? small_g : large_g);
            double dlo = D[b * QW + l], sll = fabs(dlo);
            int usable = sll > thr[l];
            double ratio = shift / (usable ? sll : 1.0);
            shift = usable & (ratio * ratio >= DBL_EPSILON) ? shift : 0.0;
            double safe = usable ? dlo : 1.0;
            f0[l] = shift == 0.0 ? dlo : (sll - shift) * ((dlo >= 0.0 ? 1.0 : -1.0) + shift / safe);
            g0[l] = E[b * QW + l];
        }
        for (int l = 0; l < QW; l++) /* the union of the blocks (scalar: a short loop) */
            if (lo[l] >= 0.0) {
                kmin = LANES_MIN(kmin, lo[l]);
                kmax = LANES_MAX(kmax, hi[l] - 2.0);
            }
        if (kmax < 0.0) break;
        /* One sweep over the union of the lanes' blocks: the bulge is chased from the top of each lane's block
         * to its bottom; a lane outside its block at step k keeps its entries. */
        for (int k = (int)kmin; k <= (int)kmax; k++) {
            const double kk = k;
            double *Dk = D + (size_t)k * QW, *Dk1 = Dk + QW;
            double *Ek = E + (size_t)k * QW, *Ekm1 = Ek - QW, *Ek1 = Ek + QW;
#pragma GCC ivdep
            for (int l = 0; l < QW; l++) {
                int act = (lo[l] <= kk) & (kk <= hi[l] - 2.0);
                int start = kk == lo[l], rotated = act & (kk != lo[l]);
                double fs = start ? f0[l] : f[l], gs = start ? g0[l] : g[l];
                double dk = Dk[l], ek = Ek[l], dk1 = Dk1[l], ek1 = Ek1[l], ekm1 = Ekm1[l];
                double r = sqrt(fs * fs + gs * gs);
                int nz = r > 0.0;
                double ir = 1.0 / (nz ? r : 1.0);
                double c = nz ? fs * ir : 1.0, s = nz ? gs * ir : 0.0;
                double f1 = c * dk + s * ek, et = c * ek - s * dk, g1 = s * dk1, dt = c * dk1;
                double r2 = sqrt(f1 * f1 + g1 * g1);
                int nz2 = r2 > 0.0;
                double ir2 = 1.0 / (nz2 ? r2 : 1.0);
                double c2 = nz2 ? f1 * ir2 : 1.0, s2 = nz2 ? g1 * ir2 : 0.0;
                double f2 = c2 * et + s2 * dt, d1 = c2 * dt - s2 * et, g2 = s2 * ek1, e1 = c2 * ek1;
                Ekm1[l] = rotated ? r : ekm1;
                Dk[l] = act ? r2 : dk;
                Dk1[l] = act ? d1 : dk1;
                Ek[l] = act ? f2 : ek;
                Ek1[l] = act ? e1 : ek1;
                f[l] = act ? f2 : f[l];
                g[l] = act ? g2 : g[l];
            }
        }
    }
    for (int l = 0; l < QW; l++) failed[l] = bad[l] != 0.0;
}

static int LANES_NAME(run)(const char *base, const Py_ssize_t *offsets, Py_ssize_t count, int m, int n,
                           Py_ssize_t rs, Py_ssize_t cs, int max_sweeps, double *out, unsigned char *failed,
                           double *work) {
    /* Matrix b is the m x n matrix with entry (i, j) at base + offsets[b] + i*rs + j*cs (bytes), m >= n >= 1.
     * work: at least LANES_WORK(m, n) doubles. Returns the number of flagged matrices. */
    double *A = work, *scratch = A + (size_t)m * n * BW;
    double *D = scratch + (size_t)(m + n) * BW, *E = D + (size_t)n * QW + QW; /* E[-1] is the row before */
    int exps[QW];
    unsigned char flag[QW];
    int nflagged = 0;
    for (Py_ssize_t b0 = 0; b0 < count; b0 += QW) {
        for (int k = 0; k < n; k++)
            for (int l = 0; l < QW; l++) D[(size_t)k * QW + l] = 0.0;
        for (int k = -1; k <= n; k++)
            for (int l = 0; l < QW; l++) E[(size_t)k * QW + l] = 0.0;
        for (int g0 = 0; g0 < QW; g0 += BW) {
            /* Pack BW matrices (zeros past the end), each scaled by 2^-e so that its largest entry is below 1. */
            for (int l = 0; l < BW; l++) {
                Py_ssize_t b = b0 + g0 + l;
                double big = 0.0;
                if (b < count) {
                    const char *M = base + offsets[b];
                    for (int i = 0; i < m; i++)
                        for (int j = 0; j < n; j++) big = fmax(big, fabs(*(const double *)(M + i * rs + j * cs)));
                }
                int e = 0;
                if (big > 0.0 && isfinite(big)) frexp(big, &e);
                exps[g0 + l] = e;
                /* 2^-e as two factors, each within range for every e of a finite double (|e| <= 1074) */
                double s1 = ldexp(1.0, -e / 2), s2 = ldexp(1.0, -e - (-e / 2));
                for (int i = 0; i < m; i++)
                    for (int j = 0; j < n; j++) {
                        double x = b < count ? *(const double *)(base + offsets[b] + i * rs + j * cs) : 0.0;
                        A[((size_t)i * n + j) * BW + l] = x * s1 * s2;
                    }
            }
            if (b0 + g0 < count) LANES_NAME(bidiagonalize)(A, scratch, m, n, D + g0, E + g0);
        }
        LANES_NAME(bidiagonal_sweeps)(D, E, n, max_sweeps, flag);
        for (int l = 0; l < QW && b0 + l < count; l++) {
            double sum = 0.0;
            for (int k = 0; k < n; k++) sum += fabs(D[(size_t)k * QW + l]);
            out[b0 + l] = ldexp(sum, exps[l]);
            failed[b0 + l] = flag[l] || !isfinite(sum);
            nflagged += failed[b0 + l];
        }
    }
    return nflagged;
}
