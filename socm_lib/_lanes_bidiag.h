/* The lane kernel's first phase for one group of LANES_W matrices: pack them side by side, matrix l in lane l
 * (the last, contiguous index of the workspace), each scaled by a power of two, and reduce each to an upper
 * bidiagonal matrix by Householder reflections from the left and the right (Golub and Kahan 1965; Golub and
 * Van Loan, Matrix Computations, Algorithm 5.4.2).
 *
 * Included by _lanes_body.h once per group width: LANES_W doubles (8, 4, 2 or 1), LANES_V a vector type of that
 * many doubles (a plain double for 1), LANES_WNAME(x) naming this copy's functions. A call on fewer than 8
 * matrices packs the smallest width that holds them, so its workspace is m n LANES_W doubles, not 8 m n. Each
 * lane runs the same sequence of IEEE operations at every width (no sums across lanes, no contraction into
 * FMA: the build uses -std=c99), so a matrix's result does not depend on how many others share its call.
 */

static inline void LANES_WNAME(reflect_columns)(double *A, const double *v, const double *tau, int k, int m,
                                                 int n, int j0, int nc) {
    /* Columns j0 .. j0+nc-1 of A, rows k .. m-1, times H = I - tau v v^T (v[k] = 1): nc independent sums, each
     * a vector of LANES_W lanes (LANES_V, so that the compiler vectorises over lanes and nothing else). */
    LANES_V w[4], t = *(const LANES_V *)tau;
    for (int c = 0; c < nc; c++) w[c] = *(const LANES_V *)(A + ((size_t)k * n + j0 + c) * LANES_W);
    for (int i = k + 1; i < m; i++) {
        const LANES_V *a = (const LANES_V *)(A + ((size_t)i * n + j0) * LANES_W);
        LANES_V vi = *(const LANES_V *)(v + (size_t)i * LANES_W);
        for (int c = 0; c < nc; c++) w[c] += vi * a[c];
    }
    for (int c = 0; c < nc; c++) {
        w[c] *= t;
        *(LANES_V *)(A + ((size_t)k * n + j0 + c) * LANES_W) -= w[c];
    }
    for (int i = k + 1; i < m; i++) {
        LANES_V *a = (LANES_V *)(A + ((size_t)i * n + j0) * LANES_W), vi = *(const LANES_V *)(v + (size_t)i * LANES_W);
        for (int c = 0; c < nc; c++) a[c] -= vi * w[c];
    }
}

static inline void LANES_WNAME(reflect_rows)(double *A, const double *u, const double *tau, int k, int n, int i0,
                                              int nr) {
    /* Rows i0 .. i0+nr-1 of A, columns k+1 .. n-1, times H = I - tau u u^T (u[k+1] = 1): nr independent sums. */
    LANES_V w[4], t = *(const LANES_V *)tau;
    for (int c = 0; c < nr; c++) w[c] = *(const LANES_V *)(A + ((size_t)(i0 + c) * n + k + 1) * LANES_W);
    for (int j = k + 2; j < n; j++) {
        LANES_V uj = *(const LANES_V *)(u + (size_t)j * LANES_W);
        for (int c = 0; c < nr; c++) w[c] += uj * *(const LANES_V *)(A + ((size_t)(i0 + c) * n + j) * LANES_W);
    }
    for (int c = 0; c < nr; c++) {
        LANES_V *a = (LANES_V *)(A + (size_t)(i0 + c) * n * LANES_W);
        w[c] *= t;
        a[k + 1] -= w[c];
        for (int j = k + 2; j < n; j++) a[j] -= *(const LANES_V *)(u + (size_t)j * LANES_W) * w[c];
    }
}

static inline void LANES_WNAME(householder)(const double *x0, const double *s, double *beta, double *tau,
                                             double *scal) {
    /* Per lane, the reflector taking (x0, x) with |x|^2 = s to (beta, 0): H = I - tau v v^T, v = (1, scal x),
     * beta = -sign(x0) sqrt(x0^2 + s) (LAPACK dlarfg); the identity (tau = 0, beta = x0) when x = 0. */
    for (int l = 0; l < LANES_W; l++) {
        double nrm = sqrt(x0[l] * x0[l] + s[l]);
        int reflect = s[l] > 0.0;
        double b = reflect ? (x0[l] >= 0.0 ? -nrm : nrm) : x0[l];
        double denom = reflect ? x0[l] - b : 1.0;
        tau[l] = reflect ? (b - x0[l]) / b : 0.0;
        scal[l] = reflect ? 1.0 / denom : 0.0;
        beta[l] = b;
    }
}

static void LANES_WNAME(bidiagonalize)(double *A, double *work, int m, int n, double *D, double *E) {
    /* A: (m, n, LANES_W) with m >= n, destroyed; D, E: the bidiagonal's diagonal and superdiagonal, (n, QW) each,
     * written at lane offset 0 (the caller offsets the pointers). work: (m + n) LANES_W doubles of scratch. The
     * reflectors are applied to four columns (rows) at a time, so that four sums run side by side. */
    double *v = work, *u = v + (size_t)m * LANES_W;
    double x0[LANES_W], s[LANES_W], beta[LANES_W], tau[LANES_W], scal[LANES_W];
    for (int k = 0; k < n; k++) {
        /* Left reflector: zero column k below the diagonal. */
        for (int l = 0; l < LANES_W; l++) {
            s[l] = 0.0;
            x0[l] = A[((size_t)k * n + k) * LANES_W + l];
        }
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * LANES_W;
            for (int l = 0; l < LANES_W; l++) s[l] += a[l] * a[l];
        }
        LANES_WNAME(householder)(x0, s, beta, tau, scal);
        for (int l = 0; l < LANES_W; l++) D[(size_t)k * QW + l] = beta[l];
        for (int i = k + 1; i < m; i++) {
            const double *a = A + ((size_t)i * n + k) * LANES_W;
            for (int l = 0; l < LANES_W; l++) v[(size_t)i * LANES_W + l] = a[l] * scal[l];
        }
        int j = k + 1;
        for (; j + 4 <= n; j += 4) LANES_WNAME(reflect_columns)(A, v, tau, k, m, n, j, 4);
        for (; j < n; j++) LANES_WNAME(reflect_columns)(A, v, tau, k, m, n, j, 1);
        if (k >= n - 1) break;
        /* Right reflector: zero row k right of the superdiagonal. */
        const double *row = A + (size_t)k * n * LANES_W;
        for (int l = 0; l < LANES_W; l++) {
            s[l] = 0.0;
            x0[l] = row[(size_t)(k + 1) * LANES_W + l];
        }
        for (int jj = k + 2; jj < n; jj++)
            for (int l = 0; l < LANES_W; l++) s[l] += row[(size_t)jj * LANES_W + l] * row[(size_t)jj * LANES_W + l];
        LANES_WNAME(householder)(x0, s, beta, tau, scal);
        for (int l = 0; l < LANES_W; l++) E[(size_t)k * QW + l] = beta[l];
        if (k + 2 >= n) continue; /* a reflector of length one is the identity */
        for (int jj = k + 2; jj < n; jj++)
            for (int l = 0; l < LANES_W; l++) u[(size_t)jj * LANES_W + l] = row[(size_t)jj * LANES_W + l] * scal[l];
        int i = k + 1;
        for (; i + 4 <= m; i += 4) LANES_WNAME(reflect_rows)(A, u, tau, k, n, i, 4);
        for (; i < m; i++) LANES_WNAME(reflect_rows)(A, u, tau, k, n, i, 1);
    }
}

static void LANES_WNAME(pack_and_bidiagonalize)(const char *base, const Py_ssize_t *offsets, Py_ssize_t count,
                                                 Py_ssize_t b0, int m, int n, Py_ssize_t rs, Py_ssize_t cs,
                                                 double *work, double *D, double *E, int *exps,
                                                 unsigned char *not_finite) {
    /* Matrices b0 .. b0+LANES_W-1 (zeros past count): pack each, scaled by 2^-e so that its largest entry lies in
     * [0.5, 1) (exps[l] = e), and bidiagonalise them into D, E (lane offset 0). A matrix with a NaN or an infinite
     * entry is packed as zeros, so that its lane converges at once, and marked in not_finite[l]. work: at least
     * LANES_WORK(m, n, LANES_W) doubles. */
    double *A = work, *scratch = A + (size_t)m * n * LANES_W;
    for (int l = 0; l < LANES_W; l++) {
        Py_ssize_t b = b0 + l;
        const char *M = b < count ? base + offsets[b] : NULL;
        double big = 0.0;
        int finite = 1;
        if (M)
            for (int i = 0; i < m; i++)
                for (int j = 0; j < n; j++) {
                    double a = fabs(*(const double *)(M + i * rs + j * cs));
                    big = a > big ? a : big;
                    finite &= a <= DBL_MAX; /* false for inf and NaN */
                }
        int e = 0;
        if (finite && big > 0.0) frexp(big, &e);
        exps[l] = e;
        not_finite[l] = !finite;
        /* 2^-e as two factors, each within range for every e of a finite double (|e| <= 1074) */
        double s1 = ldexp(1.0, -e / 2), s2 = ldexp(1.0, -e - (-e / 2));
        for (int i = 0; i < m; i++)
            for (int j = 0; j < n; j++) {
                double x = M && finite ? *(const double *)(M + i * rs + j * cs) : 0.0;
                A[((size_t)i * n + j) * LANES_W + l] = x * s1 * s2;
            }
    }
    LANES_WNAME(bidiagonalize)(A, scratch, m, n, D, E);
}
