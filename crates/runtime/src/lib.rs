//! openpim-runtime (being written)
