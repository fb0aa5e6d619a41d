// A detector's preprocessing through the C++ wrapper: a photo letterboxed to
// 640x640 (Ultralytics YOLO), a box mapped back from model coordinates to
// the photo, a batch of photos, and an NV21 camera frame through the
// ImageNet eval graph.
//
//   detect [PHOTO.jpg ...] [--frame FRAME.nv21 WIDTH HEIGHT]
//
// Build (after `cargo build --release -p tensorprep-ffi`):
//   c++ -std=c++17 -Wall -Wextra -Werror -pedantic -Iinclude examples/cpp/detect.cpp
//       -Ltarget/release -ltensorprep -Wl,-rpath,target/release -o detect
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tensorprep.hpp"

static std::vector<unsigned char> read_file(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        throw std::runtime_error("cannot read " + path);
    }
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

int main(int argc, char **argv) try {
    std::vector<std::string> photos;
    std::string frame_path;
    std::uint32_t frame_w = 0, frame_h = 0;
    for (int i = 1; i < argc; i++) {
        std::string arg = argv[i];
        if (arg == "--frame" && i + 3 < argc) {
            frame_path = argv[i + 1];
            frame_w = static_cast<std::uint32_t>(std::strtoul(argv[i + 2], nullptr, 10));
            frame_h = static_cast<std::uint32_t>(std::strtoul(argv[i + 3], nullptr, 10));
            i += 3;
        } else {
            photos.push_back(arg);
        }
    }
    if (photos.empty()) {
        photos.push_back("tests/fixtures/sample.jpg");
    }
    std::printf("tensorprep %s\n", tp::version().c_str());

    // Letterbox: compiled once, run per photo with one state.
    tp::Graph yolo = tp::Graph::preset("yolo-letterbox-640");
    tp::Plan plan = tp::Plan::jpeg(yolo);
    tp::RunState state;
    std::vector<float> input;
    std::vector<unsigned char> first = read_file(photos[0]);
    tp_geometry g = plan.run_jpeg(state, first.data(), first.size(), input);
    tp_tensor_info info = plan.output_info();
    std::printf("letterbox %s: %ux%u -> [%zu, %zu, %zu], scale %.6f, padding %.1f, %.1f\n",
                photos[0].c_str(), g.input_width, g.input_height, info.shape[0], info.shape[1],
                info.shape[2], g.scale_x, g.offset_x, g.offset_y);

    // A detection covering the whole letterboxed picture maps back to the photo.
    std::vector<float> boxes = {
        static_cast<float>(g.offset_x), static_cast<float>(g.offset_y),
        static_cast<float>(640.0 - g.offset_x), static_cast<float>(640.0 - g.offset_y),
        320.0f, 320.0f, 330.0f, 340.0f};
    tp::to_source_boxes(g, boxes);
    std::printf("box 0 in the photo: %.2f %.2f %.2f %.2f\n", boxes[0], boxes[1], boxes[2],
                boxes[3]);
    std::printf("box 1 in the photo: %.2f %.2f %.2f %.2f\n", boxes[4], boxes[5], boxes[6],
                boxes[7]);

    // A batch: every photo into one NCHW buffer.
    std::vector<std::vector<unsigned char>> files;
    std::vector<tp_bytes> batch;
    for (const std::string &p : photos) {
        files.push_back(read_file(p));
    }
    for (const auto &f : files) {
        batch.push_back(tp_bytes{f.data(), f.size()});
    }
    std::vector<float> nchw(info.elements * batch.size());
    std::vector<tp_geometry> gs =
        plan.run_batch_jpeg(state, batch, nchw.data(), nchw.size() * sizeof(float));
    std::printf("batch of %zu: first image %ux%u, same tensor as the single run: %s\n",
                gs.size(), gs[0].input_width, gs[0].input_height,
                std::equal(input.begin(), input.end(), nchw.begin()) ? "yes" : "no");

    // A camera frame (NV21, Android's default) through the ImageNet eval graph:
    // the colour conversion runs fused into the resize.
    if (!frame_path.empty()) {
        std::vector<unsigned char> nv21 = read_file(frame_path);
        tp::Graph eval = tp::Graph::preset("imagenet-eval");
        tp::Plan frames = tp::Plan::pixels(eval, TP_PIXEL_FORMAT_NV21, frame_w, frame_h);
        std::size_t luma = static_cast<std::size_t>(frame_w) * frame_h;
        tp_image image{};
        image.format = TP_PIXEL_FORMAT_NV21;
        image.width = frame_w;
        image.height = frame_h;
        image.planes[0] = tp_plane{nv21.data(), luma, frame_w};
        image.planes[1] = tp_plane{nv21.data() + luma, nv21.size() - luma, frame_w};
        std::vector<float> chw;
        frames.run_pixels(state, image, chw);
        std::printf("frame %ux%u NV21 -> %zu floats, first %.6f\n", frame_w, frame_h, chw.size(),
                    chw[0]);
    }

    // Errors are exceptions with the library's code and message.
    try {
        tp::Graph::preset("no-such-preset");
    } catch (const tp::Error &e) {
        std::printf("expected error: %s\n", e.what());
    }
    return 0;
} catch (const std::exception &e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
}
