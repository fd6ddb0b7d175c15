//! Core dumps (`OPENPIM_CORE_DIR`).

use crate::Error;

pub const CORE_DIR_ENV: &str = "OPENPIM_CORE_DIR";

pub struct Config;

impl Config {
    pub fn from_env() -> Result<Option<Config>, Error> {
        Ok(None)
    }
}

pub fn start(_c: Config) {}

pub fn inspect(path: &std::path::Path) -> Result<String, Error> {
    Err(Error::BadFile {
        path: path.display().to_string(),
        why: "not yet".into(),
    })
}
