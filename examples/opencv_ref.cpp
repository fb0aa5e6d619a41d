// The OpenCV side of `examples/pixels.rs` (feature `opencv`): the usual C++
// preprocessing of a camera frame with OpenCV's own calls, single-threaded.
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

extern "C" int tp_opencv_ref(const unsigned char* src, int nv21, int w, int h, int out_w,
                             int out_h, int interpolation, const float* mean,
                             const float* stdev, float* out) {
    try {
        static const bool single_thread = (cv::setNumThreads(1), true);
        (void)single_thread;
        cv::Mat rgb;
        if (nv21) {
            cv::Mat yuv(h * 3 / 2, w, CV_8UC1, const_cast<unsigned char*>(src));
            cv::cvtColor(yuv, rgb, cv::COLOR_YUV2RGB_NV21);
        } else {
            rgb = cv::Mat(h, w, CV_8UC3, const_cast<unsigned char*>(src));
        }
        cv::Mat small, f;
        cv::resize(rgb, small, cv::Size(out_w, out_h), 0, 0, interpolation);
        small.convertTo(f, CV_32FC3, 1.0 / 255.0);
        f = (f - cv::Scalar(mean[0], mean[1], mean[2])) / cv::Scalar(stdev[0], stdev[1], stdev[2]);
        // Split straight into the caller's CHW planes.
        std::vector<cv::Mat> planes;
        for (int c = 0; c < 3; c++) {
            planes.emplace_back(out_h, out_w, CV_32FC1, out + (size_t)c * out_w * out_h);
        }
        cv::split(f, planes);
        return 0;
    } catch (...) {
        return 1;
    }
}
