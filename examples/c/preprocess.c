/*
 * The main job through the C API: a JPEG photo to the tensor a model wants.
 *
 *   preprocess [PHOTO.jpg] [GRAPH]
 *
 * GRAPH is a graph file (.tpp), a model with a sidecar or embedded graph
 * (.onnx), or a preset name; the default is "imagenet-eval" (torchvision's
 * Resize(256), CenterCrop(224), ToTensor(), Normalize(ImageNet)). Prints the
 * tensor's shape, first values and a checksum (the one the Rust example
 * `cargo run --example preprocess` prints for the same photo and graph).
 *
 * Build (after `cargo build --release -p tensorprep-ffi`):
 *   cc -std=c99 -Wall -Wextra -Werror -pedantic -Iinclude examples/c/preprocess.c \
 *      -Ltarget/release -ltensorprep -Wl,-rpath,target/release -o preprocess
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorprep.h"

/* Prints what failed and why; returns 1 for main's exit code. */
static int fail(const char *what, tp_result r) {
    char message[512];
    tp_last_error_message(message, sizeof message, NULL);
    fprintf(stderr, "%s: %s: %s\n", what, tp_result_name(r), message);
    return 1;
}

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size;
    if (f == NULL) {
        return NULL;
    }
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = malloc((size_t)size);
        if (data != NULL && fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
        *len = (size_t)size;
    }
    fclose(f);
    return data;
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

int main(int argc, char **argv) {
    const char *photo = argc > 1 ? argv[1] : "tests/fixtures/sample.jpg";
    const char *source = argc > 2 ? argv[2] : "imagenet-eval";
    tp_graph *graph = NULL;
    tp_plan *plan = NULL;
    tp_run_state *state = NULL;
    tp_input_desc input = {TP_INPUT_KIND_JPEG, 0, 0, 0};
    tp_tensor_info info;
    tp_geometry geometry;
    unsigned char *jpeg;
    size_t jpeg_len = 0, i;
    float *tensor = NULL;
    unsigned long long checksum = 0;
    tp_result r;
    int status = 1;

    jpeg = read_file(photo, &jpeg_len);
    if (jpeg == NULL) {
        fprintf(stderr, "cannot read %s\n", photo);
        return 1;
    }
    if (ends_with(source, ".tpp") || ends_with(source, ".onnx")) {
        r = tp_graph_for_model(source, &graph);
    } else {
        r = tp_graph_from_preset(source, &graph);
    }
    if (r != TP_RESULT_OK) {
        status = fail(source, r);
        goto done;
    }
    /* Compiled once; the state holds the scratch one thread reuses. */
    if ((r = tp_plan_new(graph, &input, NULL, &plan)) != TP_RESULT_OK) {
        status = fail("tp_plan_new", r);
        goto done;
    }
    if ((r = tp_run_state_new(&state)) != TP_RESULT_OK) {
        status = fail("tp_run_state_new", r);
        goto done;
    }
    /* The output's shape, read from the photo's header if the graph's output
     * size depends on the image. */
    r = tp_plan_output_info_for_jpeg(plan, state, jpeg, jpeg_len, &info);
    if (r != TP_RESULT_OK) {
        status = fail("tp_plan_output_info_for_jpeg", r);
        goto done;
    }
    if (info.dtype != TP_DTYPE_F32) {
        fprintf(stderr, "this example prints float32 tensors; the graph makes dtype %u\n",
                (unsigned)info.dtype);
        goto done;
    }
    tensor = malloc(info.bytes);
    if (tensor == NULL) {
        goto done;
    }
    r = tp_plan_run_jpeg(plan, state, jpeg, jpeg_len, tensor, info.bytes, &geometry);
    if (r != TP_RESULT_OK) {
        status = fail("tp_plan_run_jpeg", r);
        goto done;
    }

    printf("tensorprep %s\n", tp_version());
    printf("input    %s (%ux%u, %zu bytes)\n", photo, (unsigned)geometry.input_width,
           (unsigned)geometry.input_height, jpeg_len);
    printf("graph    %s\n", source);
    printf("output   float32 [%zu, %zu, %zu] (%s)\n", info.shape[0], info.shape[1], info.shape[2],
           info.layout == TP_LAYOUT_CHW ? "CHW" : "HWC");
    printf("scale    %.6f x %.6f, offset %.2f, %.2f\n", geometry.scale_x, geometry.scale_y,
           geometry.offset_x, geometry.offset_y);
    printf("first    %.6f %.6f %.6f %.6f %.6f\n", tensor[0], tensor[1], tensor[2], tensor[3],
           tensor[4]);
    /* FNV-style over the float bits, as the Rust example prints it. */
    for (i = 0; i < info.elements; i++) {
        uint32_t bits;
        memcpy(&bits, &tensor[i], sizeof bits);
        checksum = (checksum ^ bits) * 0x100000001b3ULL;
    }
    printf("checksum %016llx\n", checksum);
    status = 0;

done:
    free(tensor);
    free(jpeg);
    tp_run_state_free(state);
    tp_plan_free(plan);
    tp_graph_free(graph);
    return status;
}
