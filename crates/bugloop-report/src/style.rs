//! Terminal styles for the text renderers: ANSI codes when colour is on, nothing otherwise.

/// ANSI styles, empty when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    on: bool,
}

impl Style {
    pub fn new(on: bool) -> Self {
        Style { on }
    }

    fn paint(self, code: &str, text: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub fn bold(self, text: &str) -> String {
        self.paint("1", text)
    }

    pub fn dim(self, text: &str) -> String {
        self.paint("2", text)
    }

    pub fn green(self, text: &str) -> String {
        self.paint("32", text)
    }

    pub fn yellow(self, text: &str) -> String {
        self.paint("33", text)
    }

    /// Colour by score: red for 7-10, yellow for 5-6, plain below.
    pub fn score(self, score: u8, text: &str) -> String {
        match score {
            7..=10 => self.paint("1;31", text),
            5..=6 => self.paint("33", text),
            _ => self.paint("36", text),
        }
    }
}
