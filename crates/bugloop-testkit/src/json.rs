//! Reading the JSON reports bugloop prints: the entries of a list picked by one field, and a
//! field's strings. Each fails the test, showing the list, where the JSON is not of that shape.

use serde_json::Value;

fn entries(list: &Value) -> &[Value] {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list:\n{list:#}"))
}

/// The entries of `list` whose `key` is the string `value`.
pub fn entries_where<'a>(list: &'a Value, key: &str, value: &str) -> Vec<&'a Value> {
    entries(list).iter().filter(|e| e[key] == value).collect()
}

/// The first entry of `list` whose `key` is the string `value`; the test fails if there is none.
#[track_caller]
pub fn entry_where<'a>(list: &'a Value, key: &str, value: &str) -> &'a Value {
    entries(list)
        .iter()
        .find(|e| e[key] == value)
        .unwrap_or_else(|| panic!("no entry with {key} = {value:?} in:\n{list:#}"))
}

/// The strings at `key` of the entries of `list`, in order (an entry without one is passed over).
pub fn strings_at<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    entries(list)
        .iter()
        .filter_map(|e| e[key].as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn entries_are_picked_by_a_field() {
        let list = json!([{"id": "a", "n": 1}, {"id": "b", "n": 2}, {"id": "a", "n": 3}, {"n": 4}]);
        assert_eq!(entry_where(&list, "id", "a")["n"], 1);
        assert_eq!(entries_where(&list, "id", "a").len(), 2);
        assert_eq!(strings_at(&list, "id"), ["a", "b", "a"]);
    }

    #[test]
    #[should_panic(expected = "no entry with id = \"c\"")]
    fn a_missing_entry_fails_the_test() {
        entry_where(&json!([{"id": "a"}]), "id", "c");
    }
}
