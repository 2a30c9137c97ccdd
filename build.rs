//! With the `python` feature: the interpreter-version cfgs (`Py_3_14`, ...) PyO3 uses, so the
//! binding can follow the CPython C API where it changed.
fn main() {
    #[cfg(feature = "python")]
    pyo3_build_config::use_pyo3_cfgs();
}
