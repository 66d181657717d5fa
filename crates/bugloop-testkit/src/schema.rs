//! Checking JSON against a JSON Schema: the test fails listing every error with where in the
//! instance it is.

use serde_json::Value;

/// Fails the test unless `instance` validates against `schema`; the message starts with `what`
/// (the instance's name, or the request it was sent with), lists every error with its place in
/// the instance and shows the whole instance.
#[track_caller]
pub fn assert_valid(schema: &Value, instance: &Value, what: &str) {
    let validator = jsonschema::validator_for(schema)
        .unwrap_or_else(|error| panic!("{what}: not a usable schema: {error}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}\n{instance:#}");
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})
    }

    #[test]
    fn a_valid_instance_passes() {
        assert_valid(&schema(), &json!({"n": 1}), "one");
    }

    #[test]
    #[should_panic(expected = "at /n")]
    fn an_invalid_instance_fails_the_test_naming_where() {
        assert_valid(&schema(), &json!({"n": "one"}), "one");
    }
}
