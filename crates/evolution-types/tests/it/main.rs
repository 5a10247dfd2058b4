//! Public-API tests of evolution-types.

mod edit;
mod ports;
mod profile;
mod records;
mod template;
