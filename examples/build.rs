//! With the `opencv` feature, compiles `opencv_ref.cpp` against the system's
//! OpenCV (Debian: `apt-get install libopencv-dev`) for the `pixels` example.

fn main() {
    println!("cargo:rerun-if-changed=opencv_ref.cpp");
    #[cfg(feature = "opencv")]
    {
        let lib = pkg_config::Config::new().probe("opencv4").expect(
            "feature `opencv` needs OpenCV 4 with pkg-config (apt-get install libopencv-dev)",
        );
        let mut build = cc::Build::new();
        build
            .cpp(true)
            .file("opencv_ref.cpp")
            .flag_if_supported("-std=c++17")
            .opt_level(3);
        for path in &lib.include_paths {
            build.include(path);
        }
        build.compile("tp_opencv_ref");
    }
}
