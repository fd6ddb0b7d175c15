# OpenPIM: the UPMEM SDK's CMake toolchain file for DPU programs
# (cmake -DCMAKE_TOOLCHAIN_FILE=$UPMEM_HOME/share/upmem/cmake/dpu.cmake): C and assembly compile
# with the DPU compiler driver, dpu-upmem-dpurte-clang (DPU programs as RV32I, DESIGN.md §3).
get_filename_component(UPMEM_HOME "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(UPMEM_HOME "${UPMEM_HOME}" CACHE PATH "The UPMEM SDK (OpenPIM's layout)")

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR dpu)
set(CMAKE_C_COMPILER "${UPMEM_HOME}/bin/dpu-upmem-dpurte-clang")
set(CMAKE_ASM_COMPILER "${UPMEM_HOME}/bin/dpu-upmem-dpurte-clang")
# The driver links whole DPU programs (crt0, runtime); test programs are linked as such.
set(CMAKE_C_COMPILER_WORKS TRUE)
set(CMAKE_ASM_COMPILER_WORKS TRUE)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
