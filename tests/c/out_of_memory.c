/* A plan whose buffers pass every limit but which the system cannot back
 * (run under an address-space limit by tests/c_api.rs): tp_plan_run_jpeg
 * returns TP_RESULT_OUT_OF_MEMORY with a message, and the process goes on
 * (the state is still usable for a small plan). Exits 0 when it does.
 * Usage: out_of_memory IMAGE.jpg BOMB.tpp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorprep.h"

static unsigned char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    unsigned char *data;
    long size;
    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) <= 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    data = malloc((size_t)size);
    if (data == NULL || fread(data, 1, (size_t)size, f) != (size_t)size) {
        exit(2);
    }
    fclose(f);
    *len = (size_t)size;
    return data;
}

int main(int argc, char **argv) {
    size_t jpeg_len, len;
    unsigned char *jpeg;
    char message[512];
    float *out;
    tp_graph *bomb = NULL, *eval = NULL;
    tp_plan *plan = NULL, *small = NULL;
    tp_run_state *state = NULL;
    tp_input_desc input = {TP_INPUT_KIND_JPEG, 0, 0, 0};
    tp_result r;
    if (argc != 3) {
        return 2;
    }
    jpeg = read_file(argv[1], &jpeg_len);
    out = malloc(3 * 224 * 224 * sizeof(float));
    if (out == NULL || tp_graph_load(argv[2], &bomb) != TP_RESULT_OK ||
        tp_plan_new(bomb, &input, NULL, &plan) != TP_RESULT_OK ||
        tp_run_state_new(&state) != TP_RESULT_OK) {
        fprintf(stderr, "setup failed\n");
        return 2;
    }
    r = tp_plan_run_jpeg(plan, state, jpeg, jpeg_len, out, 3 * 224 * 224 * sizeof(float), NULL);
    tp_last_error_message(message, sizeof message, &len);
    printf("%s: %s\n", tp_result_name(r), message);
    if (r != TP_RESULT_OUT_OF_MEMORY || strstr(message, "could not allocate") == NULL) {
        return 1;
    }
    /* The same state runs a plan that fits. */
    if (tp_graph_from_preset("imagenet-eval", &eval) != TP_RESULT_OK ||
        tp_plan_new(eval, &input, NULL, &small) != TP_RESULT_OK ||
        tp_plan_run_jpeg(small, state, jpeg, jpeg_len, out, 3 * 224 * 224 * sizeof(float),
                         NULL) != TP_RESULT_OK) {
        fprintf(stderr, "the small plan failed after the refusal\n");
        return 1;
    }
    tp_plan_free(small);
    tp_graph_free(eval);
    tp_run_state_free(state);
    tp_plan_free(plan);
    tp_graph_free(bomb);
    free(out);
    free(jpeg);
    return 0;
}
