# OpenPIM: the UPMEM SDK's CMake file for host programs
# (include($ENV{UPMEM_HOME}/share/upmem/cmake/include/host/DpuHost.cmake)). Sets, as the SDK's:
#   DPU_HOST_INCLUDE_DIRECTORIES  the host headers (dpu.h, dpu.hpp, dpu_management.h, ...)
#   DPU_HOST_LINK_DIRECTORIES     where libdpu is
#   DPU_HOST_LIBRARIES            what to link: libdpu and OpenPIM's virtual clock library
#                                 (so the program's clocks show modeled time, docs/usage.md)
# and the imported target UPMEM::DPU (headers and libraries).
get_filename_component(UPMEM_HOME "${CMAKE_CURRENT_LIST_DIR}/../../../../.." ABSOLUTE)
set(DPU_HOST_INCLUDE_DIRECTORIES "${UPMEM_HOME}/include/dpu")
set(DPU_HOST_LINK_DIRECTORIES "${UPMEM_HOME}/lib")
set(DPU_HOST_LIBRARIES "${UPMEM_HOME}/lib/libdpu.so" "${UPMEM_HOME}/lib/libopenpim_vclock.so")
if(NOT TARGET UPMEM::DPU)
    add_library(UPMEM::DPU INTERFACE IMPORTED)
    set_target_properties(UPMEM::DPU PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${DPU_HOST_INCLUDE_DIRECTORIES}"
        INTERFACE_LINK_LIBRARIES "${DPU_HOST_LIBRARIES}")
endif()
