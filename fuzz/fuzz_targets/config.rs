#![no_main]
//! Configuration parsing never panics: any text is a configuration or an error.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(config) = bugloop_config::from_yaml(text, std::path::Path::new("fuzz.yml")) {
            let _ = bugloop_config::validate(&config);
        }
    }
});
