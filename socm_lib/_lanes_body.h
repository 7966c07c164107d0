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

static void LANES_NAME(bidiagonalize)(double *A, double *v, double *u, int m, int n, double *D, double *E) {
    /* A: (m, n, BW) with m >= n, destroyed; D, E: the bidiagonal's diagonal and superdiagonal, (n, QW) each,
     * written at lane offset 0 (the caller offsets the pointers). v: (m, BW), u: (n, BW) reflector scratch. */
    double tau[BW], scal[BW], s[BW], w[BW];
    for (int k = 0; k < n; k++) {
        /* Left reflector: zero column k below the diagonal. H = I - tau v v^T, v[k] = 1. */
        for (int l = 0; l < BW; l++) s[l] = 0.0;
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * BW;
            for (int l = 0; l < BW; l++) s[l] += a[l] * a[l];
        }
        const double *akk = A + ((size_t)k * n + k) * BW;
        for (int l = 0; l < BW; l++) {
            double x0 = akk[l], nrm = sqrt(x0 * x0 + s[l]);
            int reflect = s[l] > 0.0;
            double beta = reflect ? (x0 >= 0.0 ? -nrm : nrm) : x0;
            double denom = reflect ? x0 - beta : 1.0;
            tau[l] = reflect ? (beta - x0) / beta : 0.0;
            scal[l] = reflect ? 1.0 / denom : 0.0;
            D[(size_t)k * QW + l] = beta;
        }
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * BW;
            for (int l = 0; l < BW; l++) v[(size_t)i * BW + l] = a[l] * scal[l];
        }
        for (int j = k + 1; j < n; j++) {
            double *top = A + ((size_t)k * n + j) * BW;
            for (int l = 0; l < BW; l++) w[l] = top[l];
            for (int i = k + 1; i < m; i++) {
                const double *a = A + ((size_t)i * n + j) * BW;
                for (int l = 0; l < BW; l++) w[l] += v[(size_t)i * BW + l] * a[l];
            }
            for (int l = 0; l < BW; l++) {
                w[l] *= tau[l];
                top[l] -= w[l];
            }
            for (int i = k + 1; i < m; i++) {
                double *a = A + ((size_t)i * n + j) * BW;
                for (int l = 0; l < BW; l++) a[l] -= v[(size_t)i * BW + l] * w[l];
            }
        }
        if (k >= n - 1) break;
        /* Right reflector: zero row k right of the superdiagonal. */
        const double *row = A + (size_t)k * n * BW;
        for (int l = 0; l < BW; l++) s[l] = 0.0;
        for (int j = k + 2; j < n; j++)
            for (int l = 0; l < BW; l++) s[l] += row[(size_t)j * BW + l] * row[(size_t)j * BW + l];
        for (int l = 0; l < BW; l++) {
            double x0 = row[(size_t)(k + 1) * BW + l], nrm = sqrt(x0 * x0 + s[l]);
            int reflect = s[l] > 0.0;
            double beta = reflect ? (x0 >= 0.0 ? -nrm : nrm) : x0;
            double denom = reflect ? x0 - beta : 1.0;
            tau[l] = reflect ? (beta - x0) / beta : 0.0;
            scal[l] = reflect ? 1.0 / denom : 0.0;
            E[(size_t)k * QW + l] = beta;
        }
        if (k + 2 >= n) continue; /* a reflector of length one is the identity */
        for (int j = k + 2; j < n; j++)
            for (int l = 0; l < BW; l++) u[(size_t)j * BW + l] = row[(size_t)j * BW + l] * scal[l];
        for (int i = k + 1; i < m; i++) {
            double *a = A + (size_t)i * n * BW;
            for (int l = 0; l < BW; l++) w[l] = a[(size_t)(k + 1) * BW + l];
            for (int j = k + 2; j < n; j++)
                for (int l = 0; l < BW; l++) w[l] += u[(size_t)j * BW + l] * a[(size_t)j * BW + l];
            for (int l = 0; l < BW; l++) {
                w[l] *= tau[l];
                a[(size_t)(k + 1) * BW + l] -= w[l];
            }
            for (int j = k + 2; j < n; j++)
                for (int l = 0; l < BW; l++) a[(size_t)j * BW + l] -= u[(size_t)j * BW + l] * w[l];
        }
    }
}

static void LANES_NAME(bidiagonal_sweeps)(double *D, double *E, int n, int max_sweeps, unsigned char *failed) {
    /* D: (n, QW) diagonal; E: (n + 1, QW) superdiagonal with a zero row before (E[-1]) and after (E[n - 1]).
     * On return D holds each lane's singular values (up to sign); failed[l] = 1 for a lane that did not converge. */
    double thr[QW], klo[QW], khi[QW], f0[QW], g0[QW], f[QW], g[QW];
    int lo[QW], hi[QW], sweeps[QW];
    for (int l = 0; l < QW; l++) {
        double big = 0.0;
        for (int k = 0; k < n; k++) {
            big = fmax(big, fabs(D[(size_t)k * QW + l]));
            big = fmax(big, fabs(E[(size_t)k * QW + l]));
        }
        thr[l] = DBL_EPSILON * big;
        hi[l] = n;
        sweeps[l] = 0;
        failed[l] = 0;
        f[l] = g[l] = 0.0;
    }
    for (;;) {
        int kmin = n, kmax = -1;
        for (int l = 0; l < QW; l++) {
            int h = hi[l];
            while (h > 1 && fabs(E[(size_t)(h - 2) * QW + l]) <= thr[l]) {
                E[(size_t)(h - 2) * QW + l] = 0.0;
                h--;
            }
            hi[l] = h;
            klo[l] = khi[l] = -1.0; /* inactive in this sweep */
            if (h <= 1) continue;
            if (sweeps[l] >= max_sweeps) {
                failed[l] = 1;
                hi[l] = 0;
                continue;
            }
            sweeps[l]++;
            int b = h - 2; /* the unreduced block is rows b .. h-1: E[b .. h-2] all above the threshold */
            while (b > 0 && fabs(E[(size_t)(b - 1) * QW + l]) > thr[l]) b--;
            if (b > 0) E[(size_t)(b - 1) * QW + l] = 0.0;
            for (int k = b; k < h; k++)
                if (fabs(D[(size_t)k * QW + l]) <= thr[l]) D[(size_t)k * QW + l] = 0.0;
            lo[l] = b;
            /* Shift: the smaller singular value of the trailing 2 x 2 block (LAPACK dlas2), as in dbdsqr. */
            double fa = fabs(D[(size_t)(h - 2) * QW + l]), ga = fabs(E[(size_t)(h - 2) * QW + l]);
            double ha = fabs(D[(size_t)(h - 1) * QW + l]);
            double fhmn = fmin(fa, ha), fhmx = fmax(fa, ha), shift;
            if (fhmn == 0.0) {
                shift = 0.0;
            } else if (ga < fhmx) {
                double as = 1.0 + fhmn / fhmx, at = (fhmx - fhmn) / fhmx, au = (ga / fhmx) * (ga / fhmx);
                shift = fhmn * (2.0 / (sqrt(as * as + au) + sqrt(at * at + au)));
            } else {
                double au = fhmx / ga;
                if (au == 0.0) {
                    shift = (fhmn * fhmx) / ga;
                } else {
                    double as = 1.0 + fhmn / fhmx, at = (fhmx - fhmn) / fhmx;
                    double c = 1.0 / (sqrt(1.0 + (as * au) * (as * au)) + sqrt(1.0 + (at * au) * (at * au)));
                    shift = 2.0 * ((fhmn * c) * au);
                }
            }
            double dlo = D[(size_t)b * QW + l], sll = fabs(dlo);
            if (sll == 0.0 || (shift / sll) * (shift / sll) < DBL_EPSILON) shift = 0.0;
            f0[l] = shift == 0.0 ? dlo : (sll - shift) * ((dlo >= 0.0 ? 1.0 : -1.0) + shift / dlo);
            g0[l] = E[(size_t)b * QW + l];
            klo[l] = b;
            khi[l] = h - 2;
            if (b < kmin) kmin = b;
            if (h - 2 > kmax) kmax = h - 2;
        }
        if (kmax < 0) return;
        /* One sweep over the union of the lanes' blocks: the bulge is chased from the top of each lane's block
         * to its bottom; a lane outside its block at step k keeps its entries. */
        for (int k = kmin; k <= kmax; k++) {
            const double kk = k;
            double *Dk = D + (size_t)k * QW, *Dk1 = Dk + QW;
            double *Ek = E + (size_t)k * QW, *Ekm1 = Ek - QW, *Ek1 = Ek + QW;
#pragma GCC ivdep
            for (int l = 0; l < QW; l++) {
                int act = (klo[l] <= kk) & (kk <= khi[l]);
                int start = kk == klo[l], rotated = act & (kk != klo[l]);
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
}

static int LANES_NAME(run)(const char *base, const Py_ssize_t *offsets, Py_ssize_t count, int m, int n,
                           Py_ssize_t rs, Py_ssize_t cs, int max_sweeps, double *out, unsigned char *failed,
                           double *work) {
    /* Matrix b is the m x n matrix with entry (i, j) at base + offsets[b] + i*rs + j*cs (bytes), m >= n >= 1.
     * work: at least m*n*BW + (m + n)*BW + (2n + 2)*QW doubles. Returns the number of flagged matrices. */
    double *A = work, *v = A + (size_t)m * n * BW, *u = v + (size_t)m * BW;
    double *D = u + (size_t)n * BW, *E = D + (size_t)n * QW + QW; /* E[-1] is the row before */
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
            if (b0 + g0 < count) LANES_NAME(bidiagonalize)(A, v, u, m, n, D + g0, E + g0);
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
