//! openpim-machine (being written)
