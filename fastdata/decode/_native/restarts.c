/* The lossless transcode that puts restart markers into a JPEG. See restarts.h. */
#include "restarts.h"

#include "interval.h"
#include "resegment.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>

struct tr_err {
    struct jpeg_error_mgr pub;
    jmp_buf jump;
};

static void tr_error_exit(j_common_ptr cinfo) { longjmp(((struct tr_err *)cinfo->err)->jump, 1); }

static void tr_emit(j_common_ptr cinfo, int level) {
    if (level < 0) longjmp(((struct tr_err *)cinfo->err)->jump, 1); /* a warning: damaged data */
}

/* A growing output buffer of our own: jpeg_mem_dest's is lost (leaked) when an
 * error longjmps out after it has grown. */
struct tr_dest {
    struct jpeg_destination_mgr pub;
    uint8_t *buf;
    size_t cap;
};

static void tr_init(j_compress_ptr cinfo) { (void)cinfo; }
static void tr_term(j_compress_ptr cinfo) { (void)cinfo; }

static boolean tr_grow(j_compress_ptr cinfo) {
    struct tr_dest *d = (struct tr_dest *)cinfo->dest;
    uint8_t *bigger = realloc(d->buf, d->cap * 2);
    if (!bigger) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 10);
    d->pub.next_output_byte = bigger + d->cap;
    d->pub.free_in_buffer = d->cap;
    d->buf = bigger;
    d->cap *= 2;
    return TRUE;
}

static int is_marker(const jpeg_saved_marker_ptr m, int code, const char *tag, unsigned len) {
    return m->marker == code && m->data_length >= len && memcmp(m->data, tag, len) == 0;
}

int fd_add_restarts(const uint8_t *data, size_t size, int chunks, uint8_t **out, size_t *out_size,
                    fd_result *res) {
    struct jpeg_decompress_struct src;
    struct jpeg_compress_struct dst;
    struct tr_err err;
    struct tr_dest dest;
    memset(&src, 0, sizeof(src)), memset(&dst, 0, sizeof(dst)), memset(&dest, 0, sizeof(dest));
    memset(res, 0, sizeof(*res));
    if (fd_allow_resegment && fd_resegment(data, size, chunks, out, out_size, res) != FD_RESEGMENT_DECLINED)
        return res->status;
    res->status = FD_ERROR;
    src.err = dst.err = jpeg_std_error(&err.pub);
    err.pub.error_exit = tr_error_exit;
    err.pub.emit_message = tr_emit;
    if (setjmp(err.jump)) {
        char message[JMSG_LENGTH_MAX];
        (*err.pub.format_message)((j_common_ptr)&src, message);
        snprintf(res->message, sizeof(res->message), "%s", message);
        goto done;
    }
    jpeg_create_decompress(&src);
    jpeg_create_compress(&dst);
    jpeg_mem_src(&src, data, (unsigned long)size);
    jpeg_save_markers(&src, JPEG_COM, 0xFFFF);
    for (int m = 0; m < 16; m++) jpeg_save_markers(&src, JPEG_APP0 + m, 0xFFFF);
    jpeg_read_header(&src, TRUE);
    int subsampled_gray = src.num_components == 1 && (src.comp_info[0].h_samp_factor != 1 || src.comp_info[0].v_samp_factor != 1);
    if (src.progressive_mode || src.arith_code || src.data_precision != 8 || subsampled_gray ||
        (src.num_components != 1 && src.num_components != 3) || src.jpeg_color_space == JCS_CMYK ||
        src.jpeg_color_space == JCS_YCCK) {
        res->status = FD_UNSUPPORTED;
        snprintf(res->message, sizeof(res->message), "not a baseline 8-bit grayscale or 3-component JPEG");
        goto done;
    }
    jvirt_barray_ptr *coefs = jpeg_read_coefficients(&src);
    jpeg_copy_critical_parameters(&src, &dst);
    unsigned mcu_w = src.num_components == 1 ? 8 : 8 * (unsigned)src.max_h_samp_factor;
    dst.restart_interval = fd_restart_interval((src.image_width + mcu_w - 1) / mcu_w, chunks);
    /* Fitted tables: smaller, and their statistics pass refuses coefficients out
     * of range, which libjpeg would write with the standard tables without a code. */
    dst.optimize_coding = TRUE;
    dest.cap = size + size / 4 + 4096;
    if (!(dest.buf = malloc(dest.cap))) {
        res->status = FD_NOMEM;
        snprintf(res->message, sizeof(res->message), "out of memory");
        goto done;
    }
    dest.pub.next_output_byte = dest.buf;
    dest.pub.free_in_buffer = dest.cap;
    dest.pub.init_destination = tr_init;
    dest.pub.empty_output_buffer = tr_grow;
    dest.pub.term_destination = tr_term;
    dst.dest = &dest.pub;
    jpeg_write_coefficients(&dst, coefs);
    for (jpeg_saved_marker_ptr m = src.marker_list; m; m = m->next) {
        /* libjpeg writes its own JFIF/Adobe headers; a second copy would confuse readers */
        if ((dst.write_JFIF_header && is_marker(m, JPEG_APP0, "JFIF", 5)) ||
            (dst.write_Adobe_marker && is_marker(m, JPEG_APP0 + 14, "Adobe", 5)))
            continue;
        jpeg_write_marker(&dst, m->marker, m->data, m->data_length);
    }
    jpeg_finish_compress(&dst);
    jpeg_finish_decompress(&src);
    *out = dest.buf, *out_size = dest.cap - dest.pub.free_in_buffer, dest.buf = NULL;
    res->status = FD_OK;
done:
    jpeg_destroy_compress(&dst);
    jpeg_destroy_decompress(&src);
    free(dest.buf);
    return res->status;
}
