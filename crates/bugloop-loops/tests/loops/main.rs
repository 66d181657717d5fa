//! The loops' integration tests, one binary (each test binary links the whole crate and its
//! dependencies again): reviews, acting on findings, and the converge loop, over git repositories
//! the tests build and a scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod act;
mod anchors;
mod converge;
mod increment;
mod moved;
mod review;
mod signed;
mod support;
