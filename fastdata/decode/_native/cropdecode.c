/* Decode only a JPEG's crop box: DCT-scaled (scale_denom), the box's iMCU
 * columns (jpeg_crop_scanline), its rows (jpeg_skip_scanlines above, stop
 * after the last one), then resample it into the caller's buffer.
 *
 * Every libjpeg warning is an error here: "Premature end of JPEG file" is a
 * warning to libjpeg, which then pads the image with grey. The few warnings
 * that lose no pixels come back as FD_RECOVERABLE so that the caller can use
 * a more lenient decoder. */
#include "cropdecode.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jerror.h>
#include <jpeglib.h>

#include "resample.h"
#include "segments.h"

struct fd_jerr {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
    int status;
    char message[JMSG_LENGTH_MAX];
};

/* Everything the error path frees, on the heap so longjmp leaves it intact. */
struct fd_ctx {
    struct jpeg_decompress_struct cinfo;
    struct fd_jerr jerr;
    uint8_t *pixels;
    JSAMPROW *rows;
    int cut_below; /* decoding restart segments whose last is not the file's */
};

static void fd_error_exit(j_common_ptr cinfo) {
    struct fd_jerr *e = (struct fd_jerr *)cinfo->err;
    int code = cinfo->err->msg_code;
    (*cinfo->err->format_message)(cinfo, e->message);
    /* Valid files this libjpeg build cannot take (12-bit, odd colour spaces):
     * the caller's other decoders decide. */
    e->status = code == JERR_BAD_PRECISION || code == JERR_CONVERSION_NOTIMPL || code == JERR_NOT_COMPILED
                    ? FD_UNSUPPORTED : FD_ERROR;
    longjmp(e->jump, 1);
}

static void fd_emit_message(j_common_ptr cinfo, int level) {
    struct fd_jerr *e = (struct fd_jerr *)cinfo->err;
    if (level >= 0) return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_EXTRANEOUS_DATA: /* junk between markers */
    case JWRN_JFIF_MAJOR:
    case JWRN_BOGUS_ICC:
    case JWRN_ADOBE_XFORM:
    case JWRN_NOT_SEQUENTIAL:
        e->status = FD_RECOVERABLE;
        break;
    default: /* JWRN_JPEG_EOF (truncated), JWRN_HIT_MARKER, bad Huffman codes, ... */
        e->status = FD_ERROR;
    }
    (*cinfo->err->format_message)(cinfo, e->message);
    longjmp(e->jump, 1);
}

static int fail(fd_result *res, int status, const char *message) {
    res->status = status;
    snprintf(res->message, sizeof(res->message), "%s", message);
    return status;
}

static int check_request(const fd_request *rq, fd_result *res) {
    const double *b = rq->box;
    if (rq->denom != 1 && rq->denom != 2 && rq->denom != 4 && rq->denom != 8)
        return fail(res, FD_BADARG, "scale denominator must be 1, 2, 4 or 8");
    if (rq->out_h <= 0 || rq->out_w <= 0 || rq->out_h > 65535 || rq->out_w > 65535)
        return fail(res, FD_BADARG, "output size must be 1..65535 pixels a side");
    if (rq->region[0] < 0 || rq->region[1] < 0 || rq->region[2] <= 0 || rq->region[3] <= 0)
        return fail(res, FD_BADARG, "region must have a non-negative origin and a positive size");
    /* Written as negations so that NaN fails too. */
    if (!(b[0] >= 0 && b[1] >= 0 && b[2] > 0 && b[3] > 0 && b[0] + b[2] <= rq->region[2] + 1e-6 &&
          b[1] + b[3] <= rq->region[3] + 1e-6))
        return fail(res, FD_BADARG, "box must lie inside the region");
    return FD_OK;
}

/* True when the data ends in an EOI marker: then a truncated file would have
 * lost it, and stopping after the box's last row hides no truncation. */
static int ends_with_eoi(const uint8_t *data, size_t size) {
    return size >= 2 && data[size - 2] == 0xFF && data[size - 1] == 0xD9;
}

/* Decode rows [r0, r0 + rh) and columns covering [c0, c0 + cw) of the 1/denom
 * image into c->pixels; returns the column of c0 within them. */
static int decode_region(struct fd_ctx *c, const fd_request *rq, const uint8_t *data, size_t size,
                         ptrdiff_t *stride, fd_result *res) {
    j_decompress_ptr cinfo = &c->cinfo;
    int r0 = rq->region[0], c0 = rq->region[1], rh = rq->region[2], cw = rq->region[3];
    if ((JDIMENSION)(r0 + rh) > cinfo->output_height || (JDIMENSION)(c0 + cw) > cinfo->output_width) {
        snprintf(res->message, sizeof(res->message),
                 "region %dx%d+%d+%d lies outside the %ux%u decoded image (the header was read differently)",
                 cw, rh, c0, r0, cinfo->output_width, cinfo->output_height);
        return -1;
    }
    /* One more column each side: fancy upsampling treats the crop's edges as
     * the image's and would smear the chroma of the outermost columns. */
    JDIMENSION xoff = c0 > 0 ? (JDIMENSION)c0 - 1 : 0;
    JDIMENSION width = ((JDIMENSION)(c0 + cw) < cinfo->output_width ? (JDIMENSION)(c0 + cw) + 1 : cinfo->output_width) - xoff;
    if (width < cinfo->output_width) jpeg_crop_scanline(cinfo, &xoff, &width); /* widens to iMCU edges */
    *stride = (ptrdiff_t)cinfo->output_width * 3;
    c->pixels = malloc((size_t)rh * (size_t)*stride + FD_RESAMPLE_PAD);
    c->rows = malloc(sizeof(JSAMPROW) * (size_t)rh);
    if (!c->pixels || !c->rows) return -2;
    for (int i = 0; i < rh; i++) c->rows[i] = c->pixels + (size_t)i * *stride;
    if (r0 > 0 && jpeg_skip_scanlines(cinfo, (JDIMENSION)r0) != (JDIMENSION)r0) {
        snprintf(res->message, sizeof(res->message), "could not skip to row %d", r0);
        return -1;
    }
    for (int done = 0; done < rh;) {
        JDIMENSION got = jpeg_read_scanlines(cinfo, c->rows + done, (JDIMENSION)(rh - done));
        if (got == 0) {
            snprintf(res->message, sizeof(res->message), "no scanline after row %d", r0 + done);
            return -1;
        }
        done += (int)got;
    }
    if (cinfo->output_scanline < cinfo->output_height && !ends_with_eoi(data, size)) {
        /* No EOI at the end: maybe truncated below the box. Decode the rest
         * (into one reused row) so that libjpeg reports it. */
        while (cinfo->output_scanline < cinfo->output_height) jpeg_read_scanlines(cinfo, c->rows, 1);
    }
    /* Reading on to the EOI would check the bytes after the last row: the
     * whole-file path does that only at the image's end. */
    if (cinfo->output_scanline < cinfo->output_height || c->cut_below) jpeg_abort_decompress(cinfo);
    else jpeg_finish_decompress(cinfo);
    return (int)(c0 - (int)xoff);
}

static int decode_file(struct fd_ctx *c, const uint8_t *data, size_t size, const fd_request *rq,
                       uint8_t *out, ptrdiff_t out_stride, fd_result *res) {
    j_decompress_ptr cinfo = &c->cinfo;
    cinfo->err = jpeg_std_error(&c->jerr.pub);
    c->jerr.pub.error_exit = fd_error_exit;
    c->jerr.pub.emit_message = fd_emit_message;
    if (setjmp(c->jerr.jump)) {
        fail(res, c->jerr.status ? c->jerr.status : FD_ERROR, c->jerr.message);
        goto done;
    }
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, (unsigned long)size);
    jpeg_read_header(cinfo, TRUE);
    if (rq->max_pixels && (uint64_t)cinfo->image_width * cinfo->image_height > rq->max_pixels) {
        snprintf(res->message, sizeof(res->message), "%ux%u = %llu pixels exceeds max_pixels=%llu",
                 cinfo->image_width, cinfo->image_height,
                 (unsigned long long)cinfo->image_width * cinfo->image_height,
                 (unsigned long long)rq->max_pixels);
        res->status = FD_TOO_LARGE;
        goto done;
    }
    if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
        fail(res, FD_UNSUPPORTED, "CMYK/YCCK JPEG");
        goto done;
    }
    /* What simplejpeg and PyTurboJPEG use: accurate IDCT, fancy upsampling. */
    cinfo->out_color_space = JCS_RGB; /* grayscale is expanded by libjpeg */
    cinfo->scale_num = 1;
    cinfo->scale_denom = (unsigned int)rq->denom;
    cinfo->dct_method = JDCT_ISLOW;
    cinfo->do_fancy_upsampling = TRUE;
    jpeg_start_decompress(cinfo);
    ptrdiff_t stride = 0;
    int col = decode_region(c, rq, data, size, &stride, res);
    if (col == -2) {
        fail(res, FD_NOMEM, "out of memory for the decoded region");
        goto done;
    }
    if (col < 0) {
        res->status = FD_BADARG;
        goto done;
    }
    if (fd_resample(c->pixels + col * 3, stride, rq->region[2], rq->region[3], rq->box, rq->out_h,
                    rq->out_w, rq->orientation, rq->hflip, out, out_stride)) {
        fail(res, FD_NOMEM, "out of memory while resizing");
        goto done;
    }
    res->status = FD_OK;
done:
    jpeg_destroy_decompress(cinfo);
    return res->status;
}

int fd_decode_resized(const uint8_t *data, size_t size, const fd_request *rq,
                      uint8_t *out, ptrdiff_t out_stride, fd_result *res) {
    memset(res, 0, sizeof(*res));
    if (check_request(rq, res) != FD_OK) return res->status;
    if (size < 4 || size > (size_t)(unsigned long)-1) return fail(res, FD_ERROR, "not a JPEG: too short");
    struct fd_ctx *c = calloc(1, sizeof(*c));
    if (!c) return fail(res, FD_NOMEM, "out of memory");
    /* Only the restart segments the region needs, when the file allows it. */
    fd_view view;
    fd_request shifted = *rq;
    if (fd_restart_view(data, size, rq->denom, rq->region, rq->max_pixels, &view)) {
        shifted.region[0] -= view.row_shift;
        shifted.region[1] -= view.col_shift;
        c->cut_below = view.cut_below;
        decode_file(c, view.data, view.size, &shifted, out, out_stride, res);
        free(view.data);
    } else {
        decode_file(c, data, size, rq, out, out_stride, res);
    }
    free(c->pixels);
    free(c->rows);
    free(c);
    return res->status;
}
