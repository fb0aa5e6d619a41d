//! With the `opencv` feature, compiles `opencv_ref.cpp` against the system's
//! OpenCV (Debian: `apt-get install libopencv-dev`) for the `pixels` example.
//! Without OpenCV installed the example builds without it and says so.

fn main() {
    println!("cargo:rerun-if-changed=opencv_ref.cpp");
    println!("cargo::rustc-check-cfg=cfg(tp_opencv)");
    #[cfg(feature = "opencv")]
    match pkg_config::Config::new().probe("opencv4") {
        Ok(lib) => {
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
            println!("cargo:rustc-cfg=tp_opencv");
        }
        Err(e) => println!(
            "cargo:warning=feature `opencv`: OpenCV 4 not found ({e}); \
             the pixels example runs without it (apt-get install libopencv-dev)"
        ),
    }
}
