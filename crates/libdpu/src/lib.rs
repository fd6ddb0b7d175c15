//! libdpu: the UPMEM SDK's C ABI over openpim-runtime (being written)
