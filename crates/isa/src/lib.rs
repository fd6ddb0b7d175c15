//! openpim-isa (being written)
