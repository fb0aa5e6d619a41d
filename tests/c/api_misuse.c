/*
 * Every function of the C API called with NULLs, zero lengths, short,
 * misaligned and overlapping buffers, unknown enum values and corrupt
 * inputs: each must return its error code, leave its outputs unwritten and
 * leave a message. Valid calls in between check that the library still
 * works after each failure. Run by tests/c_api.rs, also under
 * AddressSanitizer + UndefinedBehaviorSanitizer and valgrind.
 *
 *   api_misuse SAMPLE.jpg GRAPH.tpp HF.json TIMM.json FRAME_128x96.nv21 NO_GRAPH_MODEL
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorprep.h"

static int checks = 0;
static int failures = 0;

/* The result must be `want`; a failure must leave a message that contains
 * `needle` (if not NULL). */
static void expect_at(tp_result got, tp_result want, const char *needle, const char *call,
                      int line) {
    char message[1024];
    size_t len = 0;
    checks++;
    if (got != want) {
        failures++;
        tp_last_error_message(message, sizeof message, &len);
        fprintf(stderr, "line %d: %s\n  returned %s, expected %s (message: %s)\n", line, call,
                tp_result_name(got), tp_result_name(want), message);
        return;
    }
    if (want == TP_RESULT_OK) {
        return;
    }
    if (tp_last_error_message(message, sizeof message, &len) != TP_RESULT_OK || len == 0 ||
        (needle != NULL && strstr(message, needle) == NULL)) {
        failures++;
        fprintf(stderr, "line %d: %s\n  message \"%s\" lacks \"%s\"\n", line, call, message,
                needle ? needle : "(anything)");
    }
}

#define EXPECT(call, want) expect_at((call), (want), NULL, #call, __LINE__)
#define EXPECT_MSG(call, want, needle) expect_at((call), (want), (needle), #call, __LINE__)
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "line %d: CHECK(%s) failed\n", __LINE__, #cond);                       \
        }                                                                                          \
    } while (0)

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size;
    *len = 0;
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(2);
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)size);
        if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
            fprintf(stderr, "cannot read %s\n", path);
            exit(2);
        }
        *len = (size_t)size;
    }
    fclose(f);
    return data;
}

/* A pointer value no call may write (outputs stay as they were on failure). */
static int sentinel_target;
#define SENTINEL ((void *)&sentinel_target)

static tp_image packed(uint32_t format, uint32_t w, uint32_t h, const uint8_t *data, size_t len) {
    tp_image img;
    memset(&img, 0, sizeof img);
    img.format = format;
    img.width = w;
    img.height = h;
    img.planes[0].data = data;
    img.planes[0].len = len;
    return img;
}

static tp_image_mut packed_mut(uint32_t format, uint32_t w, uint32_t h, uint8_t *data,
                               size_t len) {
    tp_image_mut img;
    memset(&img, 0, sizeof img);
    img.format = format;
    img.width = w;
    img.height = h;
    img.planes[0].data = data;
    img.planes[0].len = len;
    return img;
}

static void general(void) {
    char small[4];
    size_t len = 0;
    const char *v = tp_version();
    CHECK(v != NULL && v[0] >= '0' && v[0] <= '9');
    CHECK(strcmp(tp_result_name(TP_RESULT_JPEG_CORRUPT), "TP_RESULT_JPEG_CORRUPT") == 0);
    CHECK(strcmp(tp_result_name(TP_RESULT_PANIC), "TP_RESULT_PANIC") == 0);
    CHECK(strcmp(tp_result_name(TP_RESULT_NULL_PARAMETER), "TP_RESULT_NULL_PARAMETER") == 0);
    CHECK(strcmp(tp_result_name(123456), "TP_RESULT_UNKNOWN") == 0);

    /* Leave a known message, then read it back in pieces. */
    tp_graph *g = NULL;
    EXPECT_MSG(tp_graph_from_preset(NULL, &g), TP_RESULT_NULL_PARAMETER, "`name` is NULL");
    EXPECT(tp_last_error_message(NULL, 10, &len), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_last_error_message(small, 0, &len), TP_RESULT_BUFFER_TOO_SMALL);
    EXPECT(tp_last_error_message(small, sizeof small, &len), TP_RESULT_OK);
    CHECK(strcmp(small, "`na") == 0);
    CHECK(len == strlen("`name` is NULL"));
    EXPECT(tp_last_error_message(small, sizeof small, NULL), TP_RESULT_OK);
}

static void graphs(const char *sample, const char *graph_path, const unsigned char *hf,
                   size_t hf_len, const unsigned char *timm, size_t timm_len,
                   const char *no_graph_model) {
    tp_graph *g = SENTINEL;
    unsigned char *bytes;
    size_t len, passed = 99, total = 99, name_len = 99;
    char name[64];
    static const unsigned char garbage[] = "not a graph at all";
    static const unsigned char bad_utf8[] = {'{', 0xff, '}'};

    /* Files. */
    EXPECT_MSG(tp_graph_load(NULL, &g), TP_RESULT_NULL_PARAMETER, "`path` is NULL");
    EXPECT_MSG(tp_graph_load(graph_path, NULL), TP_RESULT_NULL_PARAMETER, "`out` is NULL");
    EXPECT(tp_graph_load("/nonexistent/graph.tpp", &g), TP_RESULT_IO);
    EXPECT(tp_graph_load(sample, &g), TP_RESULT_GRAPH_NOT_A_GRAPH);
    CHECK(g == SENTINEL);
    EXPECT(tp_graph_load(graph_path, &g), TP_RESULT_OK);
    CHECK(g != SENTINEL && g != NULL);
    tp_graph_free(g);
    tp_graph_free(NULL);

    /* Bytes: empty, garbage, truncated, one byte flipped. */
    bytes = read_file(graph_path, &len);
    g = SENTINEL;
    EXPECT(tp_graph_from_bytes(NULL, 5, &g), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_from_bytes(NULL, 0, &g), TP_RESULT_GRAPH_NOT_A_GRAPH);
    EXPECT(tp_graph_from_bytes(garbage, sizeof garbage, &g), TP_RESULT_GRAPH_NOT_A_GRAPH);
    EXPECT(tp_graph_from_bytes(bytes, len - 1, &g), TP_RESULT_GRAPH_MALFORMED);
    EXPECT(tp_graph_from_bytes(bytes, len / 2, &g), TP_RESULT_GRAPH_MALFORMED);
    bytes[len / 2] ^= 0x20;
    EXPECT(tp_graph_from_bytes(bytes, len, &g), TP_RESULT_GRAPH_MALFORMED);
    bytes[len / 2] ^= 0x20;
    EXPECT(tp_graph_from_bytes(bytes, len, NULL), TP_RESULT_NULL_PARAMETER);
    CHECK(g == SENTINEL);
    EXPECT(tp_graph_from_bytes(bytes, len, &g), TP_RESULT_OK);

    /* Self-tests and the output name. */
    EXPECT(tp_graph_verify(NULL, &passed, &total), TP_RESULT_NULL_PARAMETER);
    CHECK(passed == 99 && total == 99);
    EXPECT(tp_graph_verify(g, &passed, &total), TP_RESULT_OK);
    CHECK(total >= 1 && passed == total);
    EXPECT(tp_graph_verify(g, NULL, NULL), TP_RESULT_OK);
    EXPECT(tp_graph_output_name(NULL, name, sizeof name, &name_len), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_output_name(g, NULL, 5, &name_len), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_output_name(g, name, 0, &name_len), TP_RESULT_BUFFER_TOO_SMALL);
    EXPECT(tp_graph_output_name(g, name, sizeof name, &name_len), TP_RESULT_OK);
    CHECK(strlen(name) == name_len);
    tp_graph_free(g);
    free(bytes);

    /* Models. */
    g = SENTINEL;
    EXPECT(tp_graph_for_model(NULL, &g), TP_RESULT_NULL_PARAMETER);
    EXPECT_MSG(tp_graph_for_model(no_graph_model, &g), TP_RESULT_GRAPH_NOT_FOUND, "no graph");
    CHECK(g == SENTINEL);
    EXPECT(tp_graph_for_model(graph_path, &g), TP_RESULT_OK);
    tp_graph_free(g);

    /* Presets. */
    g = SENTINEL;
    EXPECT(tp_graph_from_preset(NULL, &g), TP_RESULT_NULL_PARAMETER);
    EXPECT_MSG(tp_graph_from_preset("imagenet-evil", &g), TP_RESULT_UNKNOWN_PRESET,
               "imagenet-evil");
    EXPECT(tp_graph_from_preset("\xff\xfe", &g), TP_RESULT_INVALID_UTF8);
    EXPECT(tp_graph_from_preset("", &g), TP_RESULT_UNKNOWN_PRESET);
    EXPECT(tp_graph_from_preset("imagenet-eval", NULL), TP_RESULT_NULL_PARAMETER);
    CHECK(g == SENTINEL);
    EXPECT(tp_graph_from_preset("ResNet50_Weights.IMAGENET1K_V2", &g), TP_RESULT_OK);
    {
        /* What a graph accepts and produces. */
        tp_graph_info gi, gi_before;
        memset(&gi, 0x5a, sizeof gi);
        gi_before = gi;
        EXPECT(tp_graph_describe(NULL, &gi), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_graph_describe(g, NULL), TP_RESULT_NULL_PARAMETER);
        CHECK(memcmp(&gi, &gi_before, sizeof gi) == 0);
        EXPECT(tp_graph_describe(g, &gi), TP_RESULT_OK);
        CHECK(gi.accepts_encoded == 1);
        CHECK(gi.pixel_formats & (1u << TP_PIXEL_FORMAT_NV21));
        CHECK(gi.pixel_formats & (1u << TP_PIXEL_FORMAT_RGB8));
        CHECK(gi.yuv_range == TP_YUV_RANGE_FULL);
        CHECK(gi.ops >= 4 && gi.self_tests == 0);
        CHECK(gi.output.dtype == TP_DTYPE_F32 && gi.output.layout == TP_LAYOUT_CHW);
        CHECK(gi.output.channel_order == TP_CHANNEL_ORDER_RGB);
        CHECK(gi.output.shape[0] == 3 && gi.output.shape[1] == 224 && gi.output.shape[2] == 224);
        CHECK(gi.output.bytes == 3 * 224 * 224 * 4);
    }
    tp_graph_free(g);

    /* Importers. */
    g = SENTINEL;
    EXPECT(tp_graph_from_hugging_face(NULL, 10, &g), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_from_hugging_face(hf, 0, &g), TP_RESULT_GRAPH_IMPORT);
    EXPECT(tp_graph_from_hugging_face(hf, hf_len / 2, &g), TP_RESULT_GRAPH_IMPORT);
    EXPECT(tp_graph_from_hugging_face(bad_utf8, sizeof bad_utf8, &g), TP_RESULT_INVALID_UTF8);
    EXPECT(tp_graph_from_hugging_face(timm, timm_len, &g), TP_RESULT_GRAPH_IMPORT);
    EXPECT(tp_graph_from_hugging_face(hf, hf_len, NULL), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_from_hugging_face_backend(hf, hf_len, 0, &g), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_graph_from_hugging_face_backend(hf, hf_len, 5, &g), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_graph_from_hugging_face_backend(NULL, 10, TP_HF_BACKEND_PIL, &g),
           TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_from_timm(NULL, 10, &g), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_graph_from_timm(timm, timm_len / 2, &g), TP_RESULT_GRAPH_IMPORT);
    EXPECT(tp_graph_from_timm(bad_utf8, sizeof bad_utf8, &g), TP_RESULT_INVALID_UTF8);
    EXPECT(tp_graph_from_timm(timm, timm_len, NULL), TP_RESULT_NULL_PARAMETER);
    CHECK(g == SENTINEL);
    EXPECT(tp_graph_from_hugging_face(hf, hf_len, &g), TP_RESULT_OK);
    tp_graph_free(g);
    for (uint32_t b = TP_HF_BACKEND_TORCHVISION; b <= TP_HF_BACKEND_TORCHVISION_FLOAT32; b++) {
        g = SENTINEL;
        EXPECT(tp_graph_from_hugging_face_backend(hf, hf_len, b, &g), TP_RESULT_OK);
        tp_graph_free(g);
    }
    EXPECT(tp_graph_from_timm(timm, timm_len, &g), TP_RESULT_OK);
    tp_graph_free(g);
}

static void plans(const unsigned char *jpeg, size_t jpeg_len, const unsigned char *nv21,
                  size_t nv21_len) {
    tp_graph *g = NULL, *yolo = NULL;
    tp_plan *p = SENTINEL, *jp = NULL, *px = NULL, *small = NULL;
    tp_run_state *s = SENTINEL;
    tp_input_desc jpeg_in = {TP_INPUT_KIND_JPEG, 0, 0, 0};
    tp_input_desc frame_in = {TP_INPUT_KIND_PIXELS, TP_PIXEL_FORMAT_NV21, 128, 96};
    tp_input_desc bad;
    tp_plan_options opts;
    tp_tensor_info info, before;
    tp_geometry geom, geoms[3];
    tp_image frame, img;
    tp_bytes batch[3];
    unsigned char *corrupt, *truncated;
    float *out, *big;
    size_t out_bytes = 3 * 224 * 224 * sizeof(float);

    EXPECT(tp_graph_from_preset("imagenet-eval", &g), TP_RESULT_OK);
    EXPECT(tp_graph_from_preset("yolo-letterbox-640", &yolo), TP_RESULT_OK);

    /* Compiling. */
    EXPECT(tp_plan_new(NULL, &jpeg_in, NULL, &p), TP_RESULT_NULL_PARAMETER);
    EXPECT_MSG(tp_plan_new(g, NULL, NULL, &p), TP_RESULT_NULL_PARAMETER, "`input` is NULL");
    EXPECT(tp_plan_new(g, &jpeg_in, NULL, NULL), TP_RESULT_NULL_PARAMETER);
    bad = jpeg_in;
    bad.kind = 0;
    EXPECT_MSG(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_INVALID_PARAMETER, "input.kind");
    bad.kind = 77;
    EXPECT(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_INVALID_PARAMETER);
    bad = frame_in;
    bad.format = 99;
    EXPECT_MSG(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_INVALID_PARAMETER, "input.format");
    bad.format = TP_PIXEL_FORMAT_RGB8;
    bad.width = 0;
    EXPECT(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_INVALID_DIMENSIONS);
    bad.width = 1u << 20;
    EXPECT(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_INVALID_DIMENSIONS);
    bad.width = 100000;
    bad.height = 100000;
    EXPECT(tp_plan_new(g, &bad, NULL, &p), TP_RESULT_TOO_MANY_PIXELS);
    memset(&opts, 0, sizeof opts);
    opts.decoder = 9;
    EXPECT_MSG(tp_plan_new(g, &jpeg_in, &opts, &p), TP_RESULT_INVALID_PARAMETER, "decoder");
    EXPECT_MSG(tp_plan_new(g, &frame_in, &opts, &p), TP_RESULT_INVALID_PARAMETER, "decoder");
    CHECK(p == SENTINEL);
    {
        /* tp_plan_new_ex: versioned options, EXIF and damage handling, YUV range. */
        tp_plan_options_ex ex;
        tp_plan *q = SENTINEL;
        memset(&ex, 0, sizeof ex);
        EXPECT_MSG(tp_plan_new_ex(g, &jpeg_in, &ex, &q), TP_RESULT_INVALID_PARAMETER,
                   "struct_size");
        ex.struct_size = sizeof ex;
        ex.flags = TP_PLAN_APPLY_EXIF_ORIENTATION | TP_PLAN_IGNORE_EXIF_ORIENTATION;
        EXPECT_MSG(tp_plan_new_ex(g, &jpeg_in, &ex, &q), TP_RESULT_INVALID_PARAMETER,
                   "contradict");
        ex.flags = 0x100;
        EXPECT_MSG(tp_plan_new_ex(g, &jpeg_in, &ex, &q), TP_RESULT_INVALID_PARAMETER,
                   "unknown bits");
        ex.flags = 0;
        ex.yuv_range = 7;
        EXPECT_MSG(tp_plan_new_ex(g, &frame_in, &ex, &q), TP_RESULT_INVALID_PARAMETER,
                   "yuv_range");
        EXPECT(tp_plan_new_ex(NULL, &frame_in, &ex, &q), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_plan_new_ex(g, &frame_in, &ex, NULL), TP_RESULT_NULL_PARAMETER);
        CHECK(q == SENTINEL);
        ex.yuv_range = TP_YUV_RANGE_LIMITED;
        EXPECT(tp_plan_new_ex(g, &frame_in, &ex, &q), TP_RESULT_OK);
        tp_plan_free(q);
        ex.yuv_range = 0;
        ex.flags = TP_PLAN_APPLY_EXIF_ORIENTATION | TP_PLAN_LENIENT;
        EXPECT(tp_plan_new_ex(g, &jpeg_in, &ex, &q), TP_RESULT_OK);
        tp_plan_free(q);
        /* An older, shorter struct: the fields past its size take their defaults. */
        ex.struct_size = sizeof(size_t) + sizeof(uint32_t);
        EXPECT(tp_plan_new_ex(g, &jpeg_in, &ex, &q), TP_RESULT_OK);
        tp_plan_free(q);
        EXPECT(tp_plan_new_ex(g, &jpeg_in, NULL, &q), TP_RESULT_OK);
        tp_plan_free(q);
#if TP_VERSION_NUMBER < 100
#error "the header's version macros"
#endif
        CHECK(TP_VERSION_MAJOR == 0 && TP_VERSION_MINOR >= 1);
    }
    /* Frames need no decoder: asking for one this build may lack is no error. */
    opts.decoder = TP_DECODER_LIBJPEG_TURBO;
    EXPECT(tp_plan_new(g, &frame_in, &opts, &p), TP_RESULT_OK);
    tp_plan_free(p);
    opts.decoder = TP_DECODER_ZUNE;
    /* The output (224x224) must fit the limits when compiling; the image when running. */
    opts.max_pixels = 1000;
    EXPECT_MSG(tp_plan_new(g, &jpeg_in, &opts, &small), TP_RESULT_TOO_MANY_PIXELS, "1000");
    CHECK(small == NULL);
    opts.max_pixels = 60000;
    EXPECT(tp_plan_new(g, &jpeg_in, &opts, &small), TP_RESULT_OK);
    EXPECT(tp_plan_new(g, &jpeg_in, NULL, &jp), TP_RESULT_OK);
    EXPECT(tp_plan_new(g, &frame_in, NULL, &px), TP_RESULT_OK);

    /* Describing the output. */
    memset(&info, 0x5a, sizeof info);
    before = info;
    EXPECT(tp_plan_output_info(NULL, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_output_info(jp, NULL), TP_RESULT_NULL_PARAMETER);
    CHECK(memcmp(&info, &before, sizeof info) == 0);
    EXPECT(tp_plan_output_info(jp, &info), TP_RESULT_OK);
    CHECK(info.dtype == TP_DTYPE_F32 && info.layout == TP_LAYOUT_CHW);
    CHECK(info.shape[0] == 3 && info.shape[1] == 224 && info.shape[2] == 224);
    CHECK(info.bytes == out_bytes);

    /* States. */
    EXPECT(tp_run_state_new(NULL), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_run_state_new(&s), TP_RESULT_OK);
    CHECK(s != SENTINEL);
    EXPECT(tp_plan_output_info_for_jpeg(NULL, s, jpeg, jpeg_len, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_output_info_for_jpeg(jp, NULL, jpeg, jpeg_len, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_output_info_for_jpeg(jp, s, NULL, 10, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_output_info_for_jpeg(jp, s, jpeg, jpeg_len, NULL), TP_RESULT_NULL_PARAMETER);
    /* A fixed-shape plan still reads the header: bytes that are no image fail. */
    EXPECT(tp_plan_output_info_for_jpeg(jp, s, nv21, 64, &info), TP_RESULT_UNSUPPORTED_IMAGE_FORMAT);
    EXPECT(tp_plan_output_info_for_jpeg(jp, s, jpeg, jpeg_len, &info), TP_RESULT_OK);

    /* Corrupt and truncated JPEGs. */
    corrupt = malloc(jpeg_len);
    truncated = malloc(jpeg_len);
    memcpy(corrupt, jpeg, jpeg_len);
    memset(corrupt + 2, 0xff, 64);
    memcpy(truncated, jpeg, jpeg_len);
    out = malloc(out_bytes + sizeof(float));
    memset(&geom, 0x5a, sizeof geom);

    EXPECT(tp_plan_run_jpeg(NULL, s, jpeg, jpeg_len, out, out_bytes, &geom),
           TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_run_jpeg(jp, NULL, jpeg, jpeg_len, out, out_bytes, &geom),
           TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_run_jpeg(jp, s, NULL, jpeg_len, out, out_bytes, &geom),
           TP_RESULT_NULL_PARAMETER);
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, NULL, out_bytes, &geom),
               TP_RESULT_NULL_PARAMETER, "`out` is NULL");
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, jpeg, 0, out, out_bytes, &geom),
               TP_RESULT_UNSUPPORTED_IMAGE_FORMAT, "JPEG, PNG, WebP");
    EXPECT(tp_plan_run_jpeg(jp, s, jpeg, 1, out, out_bytes, &geom), TP_RESULT_JPEG_TRUNCATED);
    EXPECT(tp_plan_run_jpeg(jp, s, nv21, 5000, out, out_bytes, &geom),
           TP_RESULT_UNSUPPORTED_IMAGE_FORMAT);
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, (const uint8_t *)"GIF89a\1\0\1\0", 10, out, out_bytes, &geom),
               TP_RESULT_UNSUPPORTED_IMAGE_FORMAT, "GIF is not supported");
    EXPECT(tp_plan_run_jpeg(jp, s, corrupt, jpeg_len, out, out_bytes, &geom),
           TP_RESULT_JPEG_CORRUPT);
    EXPECT(tp_plan_run_jpeg(jp, s, truncated, jpeg_len / 2, out, out_bytes, &geom),
           TP_RESULT_JPEG_TRUNCATED);
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, out, out_bytes - 1, &geom),
               TP_RESULT_BUFFER_TOO_SMALL, "needs 602112 bytes");
    EXPECT(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, out, 0, &geom), TP_RESULT_BUFFER_TOO_SMALL);
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, (char *)out + 1, out_bytes, &geom),
               TP_RESULT_INVALID_PARAMETER, "aligned");
    EXPECT_MSG(tp_plan_run_jpeg(jp, s, (const uint8_t *)out, jpeg_len, out, out_bytes, &geom),
               TP_RESULT_INVALID_PARAMETER, "overlaps");
    EXPECT_MSG(tp_plan_run_jpeg(small, s, jpeg, jpeg_len, out, out_bytes, &geom),
               TP_RESULT_TOO_MANY_PIXELS, "60000");
    EXPECT(tp_plan_run_jpeg(px, s, jpeg, jpeg_len, out, out_bytes, &geom),
           TP_RESULT_INVALID_PARAMETER);
    CHECK(((unsigned char *)&geom)[0] == 0x5a && ((unsigned char *)&geom)[sizeof geom - 1] == 0x5a);
    EXPECT(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, out, out_bytes + sizeof(float), &geom),
           TP_RESULT_OK);
    CHECK(geom.input_width == 451 && geom.input_height == 300);
    CHECK(geom.output_width == 224 && geom.output_height == 224);
    EXPECT(tp_plan_run_jpeg(jp, s, jpeg, jpeg_len, out, out_bytes, NULL), TP_RESULT_OK);

    /* Frames: wrong format, size, short planes, small strides, NULL planes. */
    memset(&geom, 0x5a, sizeof geom);
    memset(&frame, 0, sizeof frame);
    frame.format = TP_PIXEL_FORMAT_NV21;
    frame.width = 128;
    frame.height = 96;
    frame.planes[0].data = nv21;
    frame.planes[0].len = 128 * 96;
    frame.planes[1].data = nv21 + 128 * 96;
    frame.planes[1].len = nv21_len - 128 * 96;
    EXPECT(tp_plan_run_pixels(px, s, NULL, out, out_bytes, &geom), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_run_pixels(NULL, s, &frame, out, out_bytes, &geom), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_run_pixels(px, NULL, &frame, out, out_bytes, &geom), TP_RESULT_NULL_PARAMETER);
    img = frame;
    img.format = TP_PIXEL_FORMAT_NV12;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_FORMAT_MISMATCH);
    img.format = 1000;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_INVALID_PARAMETER);
    img = frame;
    img.width = 126;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_SIZE_MISMATCH);
    img = frame;
    img.planes[1].len = 100;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_BUFFER_TOO_SMALL);
    img = frame;
    img.planes[0].stride = 100;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_STRIDE_TOO_SMALL);
    img = frame;
    img.planes[1].data = NULL;
    EXPECT_MSG(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_NULL_PARAMETER,
               "`image.planes[1].data` is NULL");
    img = frame;
    img.planes[0].stride = SIZE_MAX;
    EXPECT_MSG(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_BUFFER_TOO_SMALL,
               "is too large: 96 rows");
    img = frame;
    img.width = 0;
    EXPECT(tp_plan_run_pixels(px, s, &img, out, out_bytes, &geom), TP_RESULT_INVALID_DIMENSIONS);
    EXPECT(tp_plan_run_pixels(jp, s, &frame, out, out_bytes, &geom), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_plan_run_pixels(px, s, &frame, out, 12, &geom), TP_RESULT_BUFFER_TOO_SMALL);
    /* The tensor may not be written over the frame it reads. */
    big = malloc(out_bytes + nv21_len);
    memcpy(big, nv21, nv21_len);
    img = frame;
    img.planes[0].data = (const uint8_t *)big;
    img.planes[1].data = (const uint8_t *)big + 128 * 96;
    EXPECT_MSG(tp_plan_run_pixels(px, s, &img, big, out_bytes, &geom), TP_RESULT_INVALID_PARAMETER,
               "overlaps");
    free(big);
    CHECK(((unsigned char *)&geom)[0] == 0x5a);
    EXPECT(tp_plan_run_pixels(px, s, &frame, out, out_bytes, &geom), TP_RESULT_OK);
    CHECK(geom.input_width == 128 && geom.output_width == 224);

    /* Batches. */
    batch[0].data = jpeg;
    batch[0].len = jpeg_len;
    batch[1].data = corrupt;
    batch[1].len = jpeg_len;
    batch[2] = batch[0];
    big = malloc(3 * out_bytes);
    EXPECT(tp_plan_run_batch_jpeg(jp, s, NULL, 3, big, 3 * out_bytes, geoms),
           TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_plan_run_batch_jpeg(jp, s, batch, 3, big, 3 * out_bytes - 1, geoms),
           TP_RESULT_BUFFER_TOO_SMALL);
    EXPECT_MSG(tp_plan_run_batch_jpeg(jp, s, batch, 3, big, 3 * out_bytes, geoms),
               TP_RESULT_JPEG_CORRUPT, "image 1");
    EXPECT_MSG(tp_plan_run_batch_jpeg(jp, s, batch, 2, big, 3 * out_bytes,
                                      (tp_geometry *)(void *)big),
               TP_RESULT_INVALID_PARAMETER, "overlaps");
    EXPECT(tp_plan_run_batch_jpeg(jp, s, batch, 0, NULL, 0, NULL), TP_RESULT_OK);
    batch[1] = batch[0];
    EXPECT(tp_plan_run_batch_jpeg(jp, s, batch, 3, big, 3 * out_bytes, geoms), TP_RESULT_OK);
    CHECK(memcmp(big, big + 2 * (out_bytes / sizeof(float)), out_bytes) == 0);
    CHECK(geoms[2].input_width == 451);
    EXPECT(tp_plan_run_batch_pixels(px, s, NULL, 2, big, 2 * out_bytes, NULL),
           TP_RESULT_NULL_PARAMETER);
    {
        tp_image frames[2];
        frames[0] = frame;
        frames[1] = frame;
        frames[1].height = 94;
        EXPECT_MSG(tp_plan_run_batch_pixels(px, s, frames, 2, big, 2 * out_bytes, NULL),
                   TP_RESULT_SIZE_MISMATCH, "image 1");
        frames[1] = frame;
        EXPECT(tp_plan_run_batch_pixels(px, s, frames, 2, big, 2 * out_bytes, NULL), TP_RESULT_OK);
        CHECK(memcmp(big, big + out_bytes / sizeof(float), out_bytes) == 0);
    }
    free(big);

    /* A plan whose output size depends on the image cannot batch. */
    {
        static const char hf_no_crop[] =
            "{\"image_processor_type\": \"ViTImageProcessor\", \"do_resize\": false}";
        tp_graph *vary = NULL;
        tp_plan *vp = NULL;
        EXPECT(tp_graph_from_hugging_face((const uint8_t *)hf_no_crop, strlen(hf_no_crop), &vary),
               TP_RESULT_OK);
        EXPECT(tp_plan_new(vary, &jpeg_in, NULL, &vp), TP_RESULT_OK);
        EXPECT(tp_plan_output_info(vp, &info), TP_RESULT_OK);
        CHECK(info.elements == 0 && info.shape[0] == 0);
        EXPECT(tp_plan_output_info_for_jpeg(vp, s, jpeg, jpeg_len, &info), TP_RESULT_OK);
        CHECK(info.shape[0] == 3 && info.shape[1] == 300 && info.shape[2] == 451);
        EXPECT_MSG(tp_plan_run_batch_jpeg(vp, s, batch, 1, out, out_bytes, NULL),
                   TP_RESULT_INVALID_PARAMETER, "fixed");
        tp_plan_free(vp);
        tp_graph_free(vary);
    }

    /* Geometry: mapping back. */
    {
        double x = 7, y = 7;
        float boxes[8] = {0, 0, 224, 224, 10, 10, 20, 20};
        tp_geometry zero;
        memset(&zero, 0, sizeof zero);
        EXPECT(tp_geometry_to_source_point(NULL, 1, 1, &x, &y), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_geometry_to_source_point(&geom, 1, 1, NULL, &y), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_geometry_to_source_point(&geom, 1, 1, &x, NULL), TP_RESULT_NULL_PARAMETER);
        EXPECT_MSG(tp_geometry_to_source_point(&zero, 1, 1, &x, &y), TP_RESULT_INVALID_PARAMETER,
                   "invertible");
        CHECK(x == 7 && y == 7);
        EXPECT(tp_geometry_to_source_boxes(&geom, NULL, 1), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_geometry_to_source_boxes(&geom, NULL, 0), TP_RESULT_OK);
        EXPECT(tp_geometry_to_source_boxes(NULL, boxes, 2), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_geometry_to_source_boxes(&geom, boxes, (size_t)-1), TP_RESULT_INVALID_PARAMETER);
        boxes[5] = NAN;
        EXPECT_MSG(tp_geometry_to_source_boxes(&geom, boxes, 2), TP_RESULT_INVALID_PARAMETER,
                   "box 1");
        CHECK(boxes[2] == 224);
        boxes[5] = 10;
        EXPECT(tp_geometry_to_source_boxes(&geom, boxes, 2), TP_RESULT_OK);
        /* The whole 224x224 crop maps back to the centre of the 128x96 frame:
         * the shorter side 96 was scaled to 256 (x 8/3), so 224 covers 84. */
        CHECK(fabsf(boxes[2] - boxes[0] - 84.0f) < 0.2f && fabsf(boxes[3] - boxes[1] - 84.0f) < 0.2f);
        EXPECT(tp_geometry_to_source_point(&geom, 112, 112, &x, &y), TP_RESULT_OK);
        CHECK(fabs(x - 64) < 0.2 && fabs(y - 48) < 0.2);
    }

    free(out);
    free(corrupt);
    free(truncated);
    tp_run_state_free(s);
    tp_run_state_free(NULL);
    tp_plan_free(small);
    tp_plan_free(jp);
    tp_plan_free(px);
    tp_plan_free(NULL);
    tp_graph_free(g);
    tp_graph_free(yolo);
}

static void eager(const unsigned char *jpeg, size_t jpeg_len, const unsigned char *nv21,
                  size_t nv21_len) {
    tp_decode_options opts;
    tp_jpeg_info info, before;
    tp_image src, frame;
    tp_image_mut dst;
    tp_rect placed = {9, 9, 9, 9};
    tp_finish_spec spec = {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}, 255.0f,
                           TP_LAYOUT_CHW,           TP_CHANNEL_ORDER_RGB,     TP_DTYPE_F32,
                           0.0f,                    0};
    static const uint8_t gray_fill[1] = {114};
    static const uint8_t rgb_fill[3] = {114, 114, 114};
    uint8_t *rgb = malloc(451 * 300 * 3);
    uint8_t *small = malloc(64 * 48 * 3);
    uint8_t *canvas = malloc(80 * 80 * 3);
    uint8_t *rotated = malloc(48 * 64 * 3);
    float *tensor = malloc(3 * 64 * 48 * sizeof(float));
    size_t tensor_bytes = 3 * 64 * 48 * sizeof(float);

    /* Headers. */
    memset(&opts, 0, sizeof opts);
    memset(&info, 0x5a, sizeof info);
    before = info;
    EXPECT(tp_jpeg_read_info(NULL, 10, NULL, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_jpeg_read_info(jpeg, jpeg_len, NULL, NULL), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_jpeg_read_info(jpeg, 0, NULL, &info), TP_RESULT_JPEG_TRUNCATED);
    EXPECT(tp_jpeg_read_info(jpeg, 20, NULL, &info), TP_RESULT_JPEG_TRUNCATED);
    EXPECT(tp_jpeg_read_info(nv21, nv21_len, NULL, &info), TP_RESULT_JPEG_CORRUPT);
    opts.flags = 0x80;
    EXPECT_MSG(tp_jpeg_read_info(jpeg, jpeg_len, &opts, &info), TP_RESULT_INVALID_PARAMETER,
               "unknown bits");
    opts.flags = 0;
    opts.format = 42;
    EXPECT(tp_jpeg_read_info(jpeg, jpeg_len, &opts, &info), TP_RESULT_INVALID_PARAMETER);
    opts.format = 0;
    opts.decoder = 3;
    EXPECT(tp_jpeg_read_info(jpeg, jpeg_len, &opts, &info), TP_RESULT_INVALID_PARAMETER);
    opts.decoder = TP_DECODER_ZUNE;
    opts.max_pixels = 100;
    EXPECT(tp_jpeg_read_info(jpeg, jpeg_len, &opts, &info), TP_RESULT_TOO_MANY_PIXELS);
    CHECK(memcmp(&info, &before, sizeof info) == 0);
    opts.max_pixels = 0;
    EXPECT(tp_jpeg_read_info(jpeg, jpeg_len, &opts, &info), TP_RESULT_OK);
    CHECK(info.width == 451 && info.height == 300 && info.components == 3);

    /* Decoding into the caller's pixels. */
    memset(&info, 0x5a, sizeof info);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 451, 300, rgb, 451 * 300 * 3);
    EXPECT(tp_jpeg_decode(NULL, 5, &opts, &dst, &info), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len, &opts, NULL, &info), TP_RESULT_NULL_PARAMETER);
    dst.planes[0].len -= 1;
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len, &opts, &dst, &info), TP_RESULT_BUFFER_TOO_SMALL);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 450, 300, rgb, 451 * 300 * 3);
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len, &opts, &dst, &info), TP_RESULT_SIZE_MISMATCH);
    dst = packed_mut(TP_PIXEL_FORMAT_BGR8, 451, 300, rgb, 451 * 300 * 3);
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len, &opts, &dst, &info), TP_RESULT_FORMAT_MISMATCH);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 451, 300, rgb, 451 * 300 * 3);
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len / 3, &opts, &dst, &info), TP_RESULT_JPEG_TRUNCATED);
    EXPECT_MSG(tp_jpeg_decode(rgb, jpeg_len, &opts, &dst, &info), TP_RESULT_INVALID_PARAMETER,
               "overlaps");
    CHECK(memcmp(&info, &before, sizeof info) == 0);
    opts.flags = TP_DECODE_LENIENT;
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len / 3, &opts, &dst, &info), TP_RESULT_OK);
    opts.flags = 0;
    EXPECT(tp_jpeg_decode(jpeg, jpeg_len, &opts, &dst, &info), TP_RESULT_OK);
    CHECK(info.width == 451);

    /* Any supported format, found from the bytes. */
    {
        static const uint8_t png[] = {
            0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48,
            0x44, 0x52, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0x08, 0x06, 0x00, 0x00,
            0x00, 0x9d, 0x74, 0x66, 0x1a, 0x00, 0x00, 0x00, 0x1e, 0x49, 0x44, 0x41, 0x54, 0x78,
            0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x08, 0x1b, 0x40, 0x14, 0x03, 0x97, 0x88,
            0xdc, 0x7f, 0x0d, 0x23, 0x9b, 0xff, 0x6e, 0x01, 0x51, 0xff, 0x01, 0x72, 0xfb, 0x09,
            0x3c, 0x0d, 0x06, 0xa6, 0x9e, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
            0x42, 0x60, 0x82};
        static const uint8_t want[24] = {255, 0,  0,  255, 0,  255, 0,  128, 0,  0,  255, 0,
                                         10,  20, 30, 255, 40, 50,  60, 255, 70, 80, 90,  255};
        tp_image_info ii, ii_before;
        uint8_t px[24];
        tp_image_mut out_px = packed_mut(TP_PIXEL_FORMAT_RGBA8, 3, 2, px, sizeof px);
        memset(&ii, 0x5a, sizeof ii);
        ii_before = ii;
        EXPECT(tp_image_read_info(NULL, 4, NULL, &ii), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_image_read_info(png, sizeof png, NULL, NULL), TP_RESULT_NULL_PARAMETER);
        EXPECT_MSG(tp_image_read_info(nv21, nv21_len, NULL, &ii), TP_RESULT_UNSUPPORTED_IMAGE_FORMAT,
                   "JPEG, PNG");
        EXPECT(tp_image_read_info(png, 20, NULL, &ii), TP_RESULT_IMAGE_TRUNCATED);
        CHECK(memcmp(&ii, &ii_before, sizeof ii) == 0);
        EXPECT(tp_image_read_info(jpeg, jpeg_len, NULL, &ii), TP_RESULT_OK);
        CHECK(ii.format == TP_IMAGE_FORMAT_JPEG && ii.width == 451 && ii.has_alpha == 0);
        EXPECT(tp_image_read_info(png, sizeof png, NULL, &ii), TP_RESULT_OK);
        CHECK(ii.format == TP_IMAGE_FORMAT_PNG && ii.width == 3 && ii.height == 2 && ii.has_alpha == 1);
        opts.format = TP_PIXEL_FORMAT_RGBA8;
        EXPECT(tp_image_decode(png, sizeof png, &opts, NULL, &ii), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_image_decode(png, sizeof png - 30, &opts, &out_px, &ii), TP_RESULT_IMAGE_TRUNCATED);
        EXPECT(tp_image_decode(png, sizeof png, &opts, &out_px, NULL), TP_RESULT_OK);
        CHECK(memcmp(px, want, sizeof want) == 0);
        opts.format = 0;
        EXPECT(tp_image_decode(png, sizeof png, &opts, &out_px, &ii), TP_RESULT_FORMAT_MISMATCH);
        dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 451, 300, rgb, 451 * 300 * 3);
        EXPECT(tp_image_decode(jpeg, jpeg_len, &opts, &dst, &ii), TP_RESULT_OK);
        CHECK(ii.format == TP_IMAGE_FORMAT_JPEG);
    }

    /* Resizing. */
    src = packed(TP_PIXEL_FORMAT_RGB8, 451, 300, rgb, 451 * 300 * 3);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 64, 48, small, 64 * 48 * 3);
    EXPECT(tp_resize(NULL, &dst, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_resize(&src, NULL, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_resize(&src, &dst, 0), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_FAST_IMAGE_RESIZE_LANCZOS + 1), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_FAST_IMAGE_RESIZE_BILINEAR), TP_RESULT_OK);
    {
        tp_image_mut alias = packed_mut(TP_PIXEL_FORMAT_RGB8, 64, 48, rgb + 1000, 64 * 48 * 3);
        EXPECT_MSG(tp_resize(&src, &alias, TP_RESAMPLE_PILLOW_BILINEAR),
                   TP_RESULT_INVALID_PARAMETER, "overlaps");
    }
    dst.format = TP_PIXEL_FORMAT_GRAY8;
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_FORMAT_MISMATCH);
    dst.format = TP_PIXEL_FORMAT_RGB8;
    src.planes[0].len = 100;
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_OPENCV_AREA), TP_RESULT_BUFFER_TOO_SMALL);
    src.planes[0].len = 451 * 300 * 3;
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_PILLOW_BICUBIC), TP_RESULT_OK);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_TORCH_BICUBIC), TP_RESULT_OK);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_TORCH_FLOAT_BILINEAR), TP_RESULT_OK);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_TORCH_NEAREST), TP_RESULT_OK);
    EXPECT(tp_resize(&src, &dst, TP_RESAMPLE_TORCH_NEAREST_EXACT), TP_RESULT_OK);

    /* Float images. */
    {
        static float depth[40 * 30];
        static float half[20 * 15];
        tp_float_image fsrc;
        tp_float_image_mut fdst;
        tp_float_image_mut alias;
        size_t i;
        for (i = 0; i < 40 * 30; i++) {
            depth[i] = 2.5f;
        }
        memset(&fsrc, 0, sizeof fsrc);
        fsrc.data = depth;
        fsrc.len = 40 * 30;
        fsrc.width = 40;
        fsrc.height = 30;
        fsrc.channels = 1;
        memset(&fdst, 0, sizeof fdst);
        fdst.data = half;
        fdst.len = 20 * 15;
        fdst.width = 20;
        fdst.height = 15;
        fdst.channels = 1;
        EXPECT(tp_resize_f32(NULL, &fdst, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_resize_f32(&fsrc, NULL, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_NULL_PARAMETER);
        EXPECT(tp_resize_f32(&fsrc, &fdst, 0), TP_RESULT_INVALID_PARAMETER);
        EXPECT_MSG(tp_resize_f32(&fsrc, &fdst, TP_RESAMPLE_OPENCV_LINEAR), TP_RESULT_INVALID_PARAMETER,
                   "float images");
        fdst.channels = 3;
        EXPECT(tp_resize_f32(&fsrc, &fdst, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_BUFFER_TOO_SMALL);
        fdst.channels = 1;
        fsrc.len = 100;
        EXPECT(tp_resize_f32(&fsrc, &fdst, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_BUFFER_TOO_SMALL);
        fsrc.len = 40 * 30;
        alias = fdst;
        alias.data = depth + 10;
        EXPECT_MSG(tp_resize_f32(&fsrc, &alias, TP_RESAMPLE_PILLOW_BILINEAR), TP_RESULT_INVALID_PARAMETER,
                   "overlaps");
        EXPECT(tp_resize_f32(&fsrc, &fdst, TP_RESAMPLE_PILLOW_BICUBIC), TP_RESULT_OK);
        for (i = 0; i < 20 * 15; i++) {
            CHECK(half[i] > 2.4999f && half[i] < 2.5001f);
        }
        memset(half, 0, sizeof half);
        EXPECT(tp_resize_f32(&fsrc, &fdst, TP_RESAMPLE_TORCH_FLOAT_BILINEAR), TP_RESULT_OK);
        CHECK(half[0] > 2.4999f && half[20 * 15 - 1] < 2.5001f);
    }

    /* Colour. */
    memset(&frame, 0, sizeof frame);
    frame.format = TP_PIXEL_FORMAT_NV21;
    frame.width = 128;
    frame.height = 96;
    frame.planes[0].data = nv21;
    frame.planes[0].len = 128 * 96;
    frame.planes[1].data = nv21 + 128 * 96;
    frame.planes[1].len = nv21_len - 128 * 96;
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 128, 96, rgb, 128 * 96 * 3);
    EXPECT(tp_convert_color(&frame, &dst, 0), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_convert_color(NULL, &dst, TP_YUV_RANGE_FULL), TP_RESULT_NULL_PARAMETER);
    dst.width = 64;
    EXPECT(tp_convert_color(&frame, &dst, TP_YUV_RANGE_FULL), TP_RESULT_SIZE_MISMATCH);
    dst.width = 128;
    dst.format = TP_PIXEL_FORMAT_NV12;
    EXPECT(tp_convert_color(&frame, &dst, TP_YUV_RANGE_FULL), TP_RESULT_BUFFER_TOO_SMALL);
    dst.planes[0].len = 128 * 96;
    dst.planes[1].data = rgb + 128 * 96;
    dst.planes[1].len = 128 * 48;
    EXPECT(tp_convert_color(&frame, &dst, TP_YUV_RANGE_FULL), TP_RESULT_UNSUPPORTED_FORMAT);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 128, 96, rgb, 128 * 96 * 3);
    dst.format = TP_PIXEL_FORMAT_RGB8;
    EXPECT(tp_convert_color(&frame, &dst, TP_YUV_RANGE_LIMITED), TP_RESULT_OK);

    /* Crops. */
    src = packed(TP_PIXEL_FORMAT_RGB8, 64, 48, small, 64 * 48 * 3);
    {
        tp_rect r = {60, 0, 10, 10};
        uint8_t crop[10 * 10 * 3];
        uint8_t yuv_crop[10 * 10 * 2];
        tp_image_mut cd = packed_mut(TP_PIXEL_FORMAT_RGB8, 10, 10, crop, sizeof crop);
        tp_image_mut yd;
        EXPECT(tp_crop(&src, r, &cd), TP_RESULT_RECT_OUT_OF_BOUNDS);
        r.x = 2;
        EXPECT(tp_crop(&src, r, NULL), TP_RESULT_NULL_PARAMETER);
        cd.width = 9;
        EXPECT(tp_crop(&src, r, &cd), TP_RESULT_SIZE_MISMATCH);
        cd.width = 10;
        EXPECT(tp_crop(&src, r, &cd), TP_RESULT_OK);
        CHECK(memcmp(crop, small + 2 * 3, 30) == 0);
        r.x = 3;
        memset(&yd, 0, sizeof yd);
        yd.format = TP_PIXEL_FORMAT_NV21;
        yd.width = 10;
        yd.height = 10;
        yd.planes[0].data = yuv_crop;
        yd.planes[0].len = 100;
        yd.planes[1].data = yuv_crop + 100;
        yd.planes[1].len = 50;
        EXPECT(tp_crop(&frame, r, &yd), TP_RESULT_UNALIGNED_CROP);
        yd.planes[1].data = yuv_crop + 50;
        EXPECT_MSG(tp_crop(&frame, r, &yd), TP_RESULT_INVALID_PARAMETER, "overlaps");
        yd.planes[1].data = yuv_crop + 100;
        r.x = 4;
        EXPECT(tp_crop(&frame, r, &yd), TP_RESULT_OK);
    }

    /* Padding (a letterbox's second half). */
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 80, 80, canvas, 80 * 80 * 3);
    EXPECT(tp_pad(&src, &dst, TP_PLACEMENT_CENTER, NULL, 3, &placed), TP_RESULT_NULL_PARAMETER);
    EXPECT_MSG(tp_pad(&src, &dst, TP_PLACEMENT_CENTER, gray_fill, 1, &placed),
               TP_RESULT_INVALID_PARAMETER, "per pixel");
    EXPECT(tp_pad(&src, &dst, 0, rgb_fill, 3, &placed), TP_RESULT_INVALID_PARAMETER);
    dst.width = 32;
    EXPECT(tp_pad(&src, &dst, TP_PLACEMENT_CENTER, rgb_fill, 3, &placed),
           TP_RESULT_RECT_OUT_OF_BOUNDS);
    CHECK(placed.x == 9 && placed.width == 9);
    dst.width = 80;
    EXPECT(tp_pad(&src, &dst, TP_PLACEMENT_CENTER, rgb_fill, 3, &placed), TP_RESULT_OK);
    CHECK(placed.x == 8 && placed.y == 16 && placed.width == 64 && placed.height == 48);
    CHECK(canvas[0] == 114 && canvas[80 * 80 * 3 - 1] == 114);

    /* Flips and rotations. */
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 64, 48, canvas, 64 * 48 * 3);
    EXPECT(tp_flip(&src, &dst, 0), TP_RESULT_INVALID_PARAMETER);
    EXPECT(tp_flip(&src, NULL, TP_FLIP_AXIS_HORIZONTAL), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_flip(&src, &dst, TP_FLIP_AXIS_HORIZONTAL), TP_RESULT_OK);
    CHECK(memcmp(canvas, small + 63 * 3, 3) == 0);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 64, 48, rotated, 48 * 64 * 3);
    EXPECT(tp_rotate(&src, &dst, TP_ROTATION_CW90), TP_RESULT_SIZE_MISMATCH);
    EXPECT(tp_rotate(&src, &dst, 4), TP_RESULT_INVALID_PARAMETER);
    dst = packed_mut(TP_PIXEL_FORMAT_RGB8, 48, 64, rotated, 48 * 64 * 3);
    EXPECT(tp_rotate(NULL, &dst, TP_ROTATION_CW90), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_rotate(&src, &dst, TP_ROTATION_CW90), TP_RESULT_OK);
    /* The top-left pixel of a clockwise quarter turn is the source's bottom-left. */
    CHECK(memcmp(rotated, small + 47 * 64 * 3, 3) == 0);

    /* Normalize + HWC to CHW + cast. */
    EXPECT(tp_finish(NULL, &spec, tensor, tensor_bytes), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_finish(&src, NULL, tensor, tensor_bytes), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_finish(&src, &spec, NULL, tensor_bytes), TP_RESULT_NULL_PARAMETER);
    EXPECT(tp_finish(&src, &spec, tensor, tensor_bytes - 4), TP_RESULT_BUFFER_TOO_SMALL);
    spec.std[1] = 0.0f;
    EXPECT_MSG(tp_finish(&src, &spec, tensor, tensor_bytes), TP_RESULT_INVALID_PARAMETER, "std");
    spec.std[1] = 0.224f;
    spec.dtype = 0;
    EXPECT(tp_finish(&src, &spec, tensor, tensor_bytes), TP_RESULT_INVALID_PARAMETER);
    spec.dtype = TP_DTYPE_U8;
    EXPECT_MSG(tp_finish(&src, &spec, tensor, tensor_bytes), TP_RESULT_INVALID_PARAMETER,
               "quantization scale");
    spec.dtype = TP_DTYPE_F32;
    frame.planes[1].len = 0;
    EXPECT(tp_finish(&frame, &spec, tensor, tensor_bytes), TP_RESULT_BUFFER_TOO_SMALL);
    EXPECT(tp_finish(&src, &spec, tensor, tensor_bytes), TP_RESULT_OK);
    CHECK(fabsf(tensor[0] - ((float)small[0] / 255.0f - 0.485f) / 0.229f) < 1e-6f);
    CHECK(fabsf(tensor[64 * 48] - ((float)small[1] / 255.0f - 0.456f) / 0.224f) < 1e-6f);

    free(rgb);
    free(small);
    free(canvas);
    free(rotated);
    free(tensor);
}

int main(int argc, char **argv) {
    unsigned char *jpeg, *hf, *timm, *nv21;
    size_t jpeg_len, hf_len, timm_len, nv21_len;
    if (argc != 7) {
        fprintf(stderr,
                "usage: %s SAMPLE.jpg GRAPH.tpp HF.json TIMM.json FRAME_128x96.nv21 NO_GRAPH\n",
                argv[0]);
        return 2;
    }
    jpeg = read_file(argv[1], &jpeg_len);
    hf = read_file(argv[3], &hf_len);
    timm = read_file(argv[4], &timm_len);
    nv21 = read_file(argv[5], &nv21_len);

    general();
    graphs(argv[1], argv[2], hf, hf_len, timm, timm_len, argv[6]);
    plans(jpeg, jpeg_len, nv21, nv21_len);
    eager(jpeg, jpeg_len, nv21, nv21_len);

    free(jpeg);
    free(hf);
    free(timm);
    free(nv21);
    printf("%d checks, %d failed\n", checks, failures);
    return failures == 0 ? 0 : 1;
}
