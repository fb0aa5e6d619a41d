// tensorprep C++ wrapper: RAII handles and exceptions over the C API in
// tensorprep.h. Header-only, C++17.
//
//   tp::Graph graph = tp::Graph::preset("imagenet-eval");
//   tp::Plan plan = tp::Plan::jpeg(graph);
//   tp::RunState state;                          // one per thread
//   std::vector<float> input(plan.output_info().elements);
//   tp_geometry g = plan.run_jpeg(state, bytes.data(), bytes.size(), input);
//
// Every failing call throws tp::Error, which carries the tp_result code and
// the library's message. Handles are move-only and freed by their
// destructors. A Graph and a Plan may be shared by threads (const use); a
// RunState belongs to one thread at a time.
//
// Hand-written (not generated); the C header is the reference.

#ifndef TENSORPREP_HPP
#define TENSORPREP_HPP

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensorprep.h"

namespace tp {

/// A failed call: its tp_result code and the library's message.
class Error : public std::runtime_error {
public:
    Error(tp_result code, const std::string &message)
        : std::runtime_error(std::string(tp_result_name(code)) + ": " + message), code_(code) {}

    /// The C API's result code.
    tp_result code() const noexcept { return code_; }

private:
    tp_result code_;
};

namespace detail {

/// The calling thread's last error message, whole.
inline std::string last_error_message() {
    std::string message(256, '\0');
    std::size_t len = 0;
    if (tp_last_error_message(&message[0], message.size(), &len) != TP_RESULT_OK) {
        return {};
    }
    if (len >= message.size()) {
        message.assign(len + 1, '\0');
        if (tp_last_error_message(&message[0], message.size(), &len) != TP_RESULT_OK) {
            return {};
        }
    }
    message.resize(len);
    return message;
}

/// Throws tp::Error unless `r` is TP_RESULT_OK.
inline void check(tp_result r) {
    if (r != TP_RESULT_OK) {
        throw Error(r, last_error_message());
    }
}

struct GraphFree {
    void operator()(tp_graph *g) const noexcept { tp_graph_free(g); }
};
struct PlanFree {
    void operator()(tp_plan *p) const noexcept { tp_plan_free(p); }
};
struct RunStateFree {
    void operator()(tp_run_state *s) const noexcept { tp_run_state_free(s); }
};

/// The tp_dtype of a C++ element type.
template <typename T> struct dtype_of;
template <> struct dtype_of<float> {
    static constexpr std::uint32_t value = TP_DTYPE_F32;
};
template <> struct dtype_of<std::uint16_t> {
    static constexpr std::uint32_t value = TP_DTYPE_F16;
};
template <> struct dtype_of<std::uint8_t> {
    static constexpr std::uint32_t value = TP_DTYPE_U8;
};
template <> struct dtype_of<std::int8_t> {
    static constexpr std::uint32_t value = TP_DTYPE_I8;
};

} // namespace detail

/// The library's version string.
inline std::string version() { return tp_version(); }

/// A preprocessing graph (owns a tp_graph).
class Graph {
public:
    /// A graph file (.tpp).
    static Graph load(const std::string &path) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_load(path.c_str(), &g));
        return Graph(g);
    }

    /// A graph file's bytes.
    static Graph from_bytes(const void *data, std::size_t len) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_from_bytes(static_cast<const std::uint8_t *>(data), len, &g));
        return Graph(g);
    }

    /// The graph of a model: its sidecar .tpp or the graph embedded in the ONNX file.
    static Graph for_model(const std::string &model_path) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_for_model(model_path.c_str(), &g));
        return Graph(g);
    }

    /// A built-in preset or a torchvision weights name.
    static Graph preset(const std::string &name) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_from_preset(name.c_str(), &g));
        return Graph(g);
    }

    /// A Hugging Face preprocessor_config.json's text, as transformers runs it
    /// with `backend` (TP_HF_BACKEND_TORCHVISION: its default).
    static Graph hugging_face(const std::string &json,
                              std::uint32_t backend = TP_HF_BACKEND_TORCHVISION) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_from_hugging_face_backend(
            reinterpret_cast<const std::uint8_t *>(json.data()), json.size(), backend, &g));
        return Graph(g);
    }

    /// A timm pretrained_cfg's JSON text.
    static Graph timm(const std::string &json) {
        tp_graph *g = nullptr;
        detail::check(tp_graph_from_timm(reinterpret_cast<const std::uint8_t *>(json.data()),
                                         json.size(), &g));
        return Graph(g);
    }

    /// Runs the self-tests; throws tp::Error (TP_RESULT_SELF_TEST_FAILED) on a
    /// mismatch. Returns how many ran.
    std::size_t verify() const {
        std::size_t passed = 0, total = 0;
        detail::check(tp_graph_verify(ptr_.get(), &passed, &total));
        return total;
    }

    /// The model input's name the tensor is for (may be empty).
    std::string output_name() const {
        std::size_t len = 0;
        char probe[1];
        tp_result r = tp_graph_output_name(ptr_.get(), probe, sizeof probe, &len);
        if (r == TP_RESULT_OK) {
            return {};
        }
        if (r != TP_RESULT_BUFFER_TOO_SMALL) {
            detail::check(r);
        }
        std::string name(len + 1, '\0');
        detail::check(tp_graph_output_name(ptr_.get(), &name[0], name.size(), &len));
        name.resize(len);
        return name;
    }

    /// The C handle, still owned by this object.
    const tp_graph *get() const noexcept { return ptr_.get(); }

private:
    explicit Graph(tp_graph *g) : ptr_(g) {}
    std::unique_ptr<tp_graph, detail::GraphFree> ptr_;
};

/// One thread's scratch for running plans (owns a tp_run_state).
class RunState {
public:
    RunState() {
        tp_run_state *s = nullptr;
        detail::check(tp_run_state_new(&s));
        ptr_.reset(s);
    }

    /// The C handle, still owned by this object.
    tp_run_state *get() noexcept { return ptr_.get(); }

private:
    std::unique_ptr<tp_run_state, detail::RunStateFree> ptr_;
};

/// A graph compiled for one kind of input (owns a tp_plan). Immutable: share
/// it between threads, each with its own RunState.
class Plan {
public:
    /// For JPEG files.
    static Plan jpeg(const Graph &graph, const tp_plan_options *options = nullptr) {
        tp_input_desc input{TP_INPUT_KIND_JPEG, 0, 0, 0};
        return Plan(graph, input, options);
    }

    /// For raw frames of one format and size.
    static Plan pixels(const Graph &graph, std::uint32_t format, std::uint32_t width,
                       std::uint32_t height, const tp_plan_options *options = nullptr) {
        tp_input_desc input{TP_INPUT_KIND_PIXELS, format, width, height};
        return Plan(graph, input, options);
    }

    /// The output tensor (shape zero when it depends on the image).
    tp_tensor_info output_info() const {
        tp_tensor_info info{};
        detail::check(tp_plan_output_info(ptr_.get(), &info));
        return info;
    }

    /// The output tensor for one JPEG (shape read from its header).
    tp_tensor_info output_info(RunState &state, const void *data, std::size_t len) const {
        tp_tensor_info info{};
        detail::check(tp_plan_output_info_for_jpeg(
            ptr_.get(), state.get(), static_cast<const std::uint8_t *>(data), len, &info));
        return info;
    }

    /// Runs one JPEG into `out_bytes` bytes at `out`.
    tp_geometry run_jpeg(RunState &state, const void *data, std::size_t len, void *out,
                         std::size_t out_bytes) const {
        tp_geometry g{};
        detail::check(tp_plan_run_jpeg(ptr_.get(), state.get(),
                                       static_cast<const std::uint8_t *>(data), len, out,
                                       out_bytes, &g));
        return g;
    }

    /// Runs one JPEG into a vector of the plan's element type (float,
    /// std::uint16_t for f16, std::uint8_t, std::int8_t), resized to fit.
    template <typename T>
    tp_geometry run_jpeg(RunState &state, const void *data, std::size_t len,
                         std::vector<T> &out) const {
        tp_tensor_info info = output_info(state, data, len);
        check_dtype<T>(info);
        out.resize(info.elements);
        return run_jpeg(state, data, len, out.data(), out.size() * sizeof(T));
    }

    /// Runs one frame into `out_bytes` bytes at `out`.
    tp_geometry run_pixels(RunState &state, const tp_image &image, void *out,
                           std::size_t out_bytes) const {
        tp_geometry g{};
        detail::check(tp_plan_run_pixels(ptr_.get(), state.get(), &image, out, out_bytes, &g));
        return g;
    }

    /// Runs one frame into a vector of the plan's element type, resized to fit.
    template <typename T>
    tp_geometry run_pixels(RunState &state, const tp_image &image, std::vector<T> &out) const {
        tp_tensor_info info = output_info();
        check_dtype<T>(info);
        out.resize(info.elements);
        return run_pixels(state, image, out.data(), out.size() * sizeof(T));
    }

    /// Runs JPEGs into one batch buffer; returns each image's geometry.
    std::vector<tp_geometry> run_batch_jpeg(RunState &state, const std::vector<tp_bytes> &inputs,
                                            void *out, std::size_t out_bytes) const {
        std::vector<tp_geometry> g(inputs.size());
        detail::check(tp_plan_run_batch_jpeg(ptr_.get(), state.get(), inputs.data(),
                                             inputs.size(), out, out_bytes, g.data()));
        return g;
    }

    /// The C handle, still owned by this object.
    const tp_plan *get() const noexcept { return ptr_.get(); }

private:
    Plan(const Graph &graph, const tp_input_desc &input, const tp_plan_options *options) {
        tp_plan *p = nullptr;
        detail::check(tp_plan_new(graph.get(), &input, options, &p));
        ptr_.reset(p);
    }

    template <typename T> static void check_dtype(const tp_tensor_info &info) {
        if (info.dtype != detail::dtype_of<T>::value) {
            throw Error(TP_RESULT_INVALID_PARAMETER,
                        "the vector's element type is not the plan's output dtype");
        }
    }

    std::unique_ptr<tp_plan, detail::PlanFree> ptr_;
};

/// Maps boxes {x0, y0, x1, y1} from model coordinates back to the input, in place.
inline void to_source_boxes(const tp_geometry &geometry, std::vector<float> &boxes) {
    if (boxes.size() % 4 != 0) {
        throw Error(TP_RESULT_INVALID_PARAMETER, "boxes hold 4 floats each");
    }
    detail::check(tp_geometry_to_source_boxes(&geometry, boxes.data(), boxes.size() / 4));
}

} // namespace tp

#endif // TENSORPREP_HPP
