/* Fuzz harness for fastdata/decode/_native: mutated JPEGs and random requests
 * straight into fd_decode_resized, no Python in between, so AddressSanitizer
 * and LeakSanitizer see only this code and libjpeg.
 *
 *   fuzz_cropdecode SEED ITERATIONS FILE...
 *
 * Prints one line: iterations, counts per status, and a hash of every
 * successful output (the SIMD and the plain C builds must agree on it).
 * Restart-marked inputs are decoded twice, only the segments the crop needs
 * and the whole file: when both succeed the pixels must be the same. Some
 * inputs first go through the lossless transcode (fd_resegment, which cuts
 * the data into restart segments, else libjpeg's re-encode in
 * fd_add_restarts), whose output, when there is one, is what gets decoded;
 * the whole-file decode of the input must then give the same pixels.
 * Built and run by tests/native/fuzz.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cropdecode.h"
#include "resegment.h"
#include "restarts.h"
#include "segments.h"

extern int fd_allow_avx2;

static uint64_t state;

static uint32_t rnd(void) { /* xorshift64*: reproducible from SEED */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return (uint32_t)((state * 0x2545F4914F6CDD1DULL) >> 32);
}

static uint32_t below(uint32_t n) { return n ? rnd() % n : 0; }

static double unit(void) { return rnd() / 4294967296.0; }

typedef struct {
    uint8_t *data;
    size_t size;
    int width, height; /* from the SOF of the unmutated file */
} seed_t;

static int read_sof(const uint8_t *d, size_t n, int *w, int *h) {
    for (size_t i = 2; i + 9 < n; i++)
        if (d[i] == 0xFF && d[i + 1] >= 0xC0 && d[i + 1] <= 0xCF && d[i + 1] != 0xC4 && d[i + 1] != 0xC8 &&
            d[i + 1] != 0xCC) {
            *h = d[i + 5] << 8 | d[i + 6];
            *w = d[i + 7] << 8 | d[i + 8];
            return 0;
        }
    return -1;
}

/* One to four mutations: bit flips, byte pokes, marker injection, cuts,
 * splices and header-field edits. Returns the new size (<= cap). */
static size_t mutate(uint8_t *buf, size_t size, size_t cap) {
    int rounds = 1 + (int)below(4);
    for (int r = 0; r < rounds && size > 4; r++) {
        size_t at = below((uint32_t)size);
        switch (below(8)) {
        case 0: buf[at] ^= (uint8_t)(1u << below(8)); break;
        case 1: buf[at] = (uint8_t)rnd(); break;
        case 2: buf[at] = below(2) ? 0xFF : 0x00; break;
        case 3: /* a marker in the middle of anything */
            if (at + 1 < size) {
                static const uint8_t markers[] = {0xD9, 0xD0, 0xD7, 0xDA, 0xC4, 0xDB, 0xC0, 0xC2, 0xDD, 0x00};
                buf[at] = 0xFF;
                buf[at + 1] = markers[below(sizeof(markers))];
            }
            break;
        case 4: size = 2 + below((uint32_t)size - 2); break; /* truncate */
        case 5: { /* delete a chunk */
            size_t len = 1 + below(64);
            if (at + len < size) {
                memmove(buf + at, buf + at + len, size - at - len);
                size -= len;
            }
            break;
        }
        case 6: { /* duplicate a chunk */
            size_t len = 1 + below(64), from = below((uint32_t)size);
            if (from + len <= size && size + len <= cap) {
                memmove(buf + at + len, buf + at, size - at);
                memmove(buf + at, buf + from + (from >= at ? len : 0), len);
                size += len;
            }
            break;
        }
        default: /* a header field: sizes, sampling factors, table lengths */
            for (size_t i = 2; i + 12 < size; i++)
                if (buf[i] == 0xFF && buf[i + 1] >= 0xC0 && buf[i + 1] <= 0xDB && below(3) == 0) {
                    buf[i + 2 + below(10)] = below(2) ? (uint8_t)rnd() : (uint8_t)(buf[i + 5] + 1);
                    break;
                }
        }
    }
    return size;
}

static void random_request(const seed_t *s, fd_request *rq) {
    static const int denoms[] = {1, 2, 4, 8};
    memset(rq, 0, sizeof(*rq));
    rq->denom = below(10) ? denoms[below(4)] : (int)below(10);
    int dh = (s->height + rq->denom - 1) / (rq->denom ? rq->denom : 1);
    int dw = (s->width + rq->denom - 1) / (rq->denom ? rq->denom : 1);
    if (dh < 1) dh = 1;
    if (dw < 1) dw = 1;
    rq->region[2] = 1 + (int)below((uint32_t)dh);
    rq->region[3] = 1 + (int)below((uint32_t)dw);
    rq->region[0] = (int)below((uint32_t)(dh - rq->region[2] + 1));
    rq->region[1] = (int)below((uint32_t)(dw - rq->region[3] + 1));
    if (below(20) == 0) rq->region[below(4)] += (int)below(3) - 1; /* off by one, either way */
    double t = unit() * rq->region[2] * 0.5, l = unit() * rq->region[3] * 0.5;
    rq->box[0] = below(3) ? 0.0 : t;
    rq->box[1] = below(3) ? 0.0 : l;
    rq->box[2] = (rq->region[2] - rq->box[0]) * (below(3) ? 1.0 : unit() + 1e-3);
    rq->box[3] = (rq->region[3] - rq->box[1]) * (below(3) ? 1.0 : unit() + 1e-3);
    if (below(50) == 0) rq->box[below(4)] = below(2) ? -1.0 : 1e9;
    int side = below(4) == 0 ? 1 + (int)below(8) : 1 + (int)below(300);
    rq->out_h = below(2) ? side : 1 + (int)below(300);
    rq->out_w = below(2) ? side : 1 + (int)below(300);
    rq->orientation = below(10) ? 1 + (int)below(8) : (int)below(10);
    rq->hflip = (int)below(2);
    /* As callers do, always a limit: a mutated header may claim 65500 x 65500,
     * and progressive decoding allocates (and zeroes) the whole image. */
    rq->max_pixels = below(10) ? (uint64_t)4 << 20 : (uint64_t)below(1u << 20);
}

/* What fd_decode_resized checks before it looks for restart segments. */
static int status_of_request_ok(const fd_request *rq) {
    return (rq->denom == 1 || rq->denom == 2 || rq->denom == 4 || rq->denom == 8) && rq->region[0] >= 0 &&
           rq->region[1] >= 0 && rq->region[2] > 0 && rq->region[3] > 0;
}

static int load(const char *path, seed_t *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    s->data = malloc((size_t)n);
    s->size = s->data && fread(s->data, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    if (!s->size || read_sof(s->data, s->size, &s->width, &s->height)) {
        fprintf(stderr, "%s: not a JPEG with a frame header\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s SEED ITERATIONS FILE...\n", argv[0]);
        return 2;
    }
    state = strtoull(argv[1], NULL, 10) * 2654435761ULL + 1;
    long iterations = strtol(argv[2], NULL, 10);
    int nseeds = argc - 3;
    seed_t *seeds = calloc((size_t)nseeds, sizeof(seed_t));
    size_t cap = 0;
    for (int i = 0; i < nseeds; i++) {
        if (load(argv[3 + i], &seeds[i])) return 2;
        if (seeds[i].size > cap) cap = seeds[i].size;
    }
    cap += 4096;
    uint8_t *buf = malloc(cap);
    long counts[8] = {0}, transcoded = 0, resegmented = 0, segmented = 0;
    uint64_t hash = 1469598103934665603ULL;
    for (long it = 0; it < iterations; it++) {
        const seed_t *s = &seeds[below((uint32_t)nseeds)];
        memcpy(buf, s->data, s->size);
        size_t size = below(8) ? mutate(buf, s->size, cap) : s->size; /* some stay intact */
        fd_request rq;
        random_request(s, &rq);
        fd_allow_avx2 = (int)below(2);
        /* Exactly the output's size, so ASan catches any write past it. */
        ptrdiff_t stride = (ptrdiff_t)rq.out_w * 3 + (below(4) == 0 ? (ptrdiff_t)below(7) : 0);
        size_t out_size = rq.out_h > 0 && rq.out_w > 0 ? (size_t)(rq.out_h - 1) * stride + (size_t)rq.out_w * 3 : 1;
        uint8_t *out = malloc(out_size);
        uint8_t *copy = malloc(size ? size : 1); /* exactly the data's size, too */
        memcpy(copy, buf, size);
        fd_result res;
        uint8_t *input = NULL; /* the transcode's input, when it gave an output */
        size_t input_size = 0;
        if (below(6) == 0) { /* the transcode, on intact or mutated data */
            uint8_t *marked;
            size_t marked_size;
            int chunks = 1 + (int)below(40), st = FD_RESEGMENT_DECLINED;
            if (below(4)) { /* the fast path, else libjpeg's re-encode alone */
                st = fd_resegment(copy, size, chunks, &marked, &marked_size, &res);
                resegmented += st == FD_OK;
            }
            fd_allow_resegment = 0;
            if (st == FD_RESEGMENT_DECLINED)
                st = fd_add_restarts(copy, size, chunks, &marked, &marked_size, &res);
            fd_allow_resegment = 1;
            if (st == FD_OK) {
                input = copy, input_size = size;
                copy = marked, size = marked_size;
                hash = (hash ^ marked_size) * 1099511628211ULL;
                transcoded++;
            }
        }
        fd_view view;
        if (status_of_request_ok(&rq) && fd_restart_view(copy, size, rq.denom, rq.region, rq.max_pixels, &view)) {
            segmented++; /* this one goes through the segment path */
            free(view.data);
        }
        fd_allow_segments = 1;
        int status = fd_decode_resized(copy, size, &rq, out, stride, &res);
        counts[status >= 0 && status < 7 ? status : 7]++;
        if (status == FD_OK) { /* the whole-file path must agree */
            uint8_t *whole = malloc(out_size);
            fd_result wres;
            fd_allow_segments = 0;
            if (fd_decode_resized(copy, size, &rq, whole, stride, &wres) == FD_OK)
                for (int y = 0; y < rq.out_h; y++)
                    if (memcmp(out + y * stride, whole + y * stride, (size_t)rq.out_w * 3)) {
                        printf("MISMATCH segments vs whole file, iteration %ld\n", it);
                        return 3;
                    }
            free(whole);
        }
        if (status == FD_OK && input) { /* lossless: the input decodes to the same pixels */
            uint8_t *before = malloc(out_size);
            fd_result bres;
            fd_allow_segments = 0;
            int bst = fd_decode_resized(input, input_size, &rq, before, stride, &bres);
            for (int y = 0; bst == FD_OK && y < rq.out_h; y++)
                if (memcmp(out + y * stride, before + y * stride, (size_t)rq.out_w * 3)) {
                    printf("MISMATCH transcode vs its input, iteration %ld\n", it);
                    return 3;
                }
            free(before);
        }
        free(input);
        if (status == FD_OK)
            for (int y = 0; y < rq.out_h; y++)
                for (int x = 0; x < rq.out_w * 3; x++) hash = (hash ^ out[y * stride + x]) * 1099511628211ULL;
        free(out);
        free(copy);
    }
    printf("iterations %ld ok %ld error %ld too_large %ld unsupported %ld recoverable %ld nomem %ld badarg %ld "
           "transcoded %ld resegmented %ld segmented %ld hash %016llx\n",
           iterations, counts[FD_OK], counts[FD_ERROR], counts[FD_TOO_LARGE], counts[FD_UNSUPPORTED],
           counts[FD_RECOVERABLE], counts[FD_NOMEM], counts[FD_BADARG], transcoded, resegmented, segmented, (unsigned long long)hash);
    for (int i = 0; i < nseeds; i++) free(seeds[i].data);
    free(seeds);
    free(buf);
    return 0;
}
