# NCCL header against LibTorch's NCCL (issue 13, item 3).
#
# ProcessGroupNCCL::Options embeds NCCL's ncclConfig_t, laid out by whichever nccl.h this build finds;
# a different NCCL version than the one LibTorch was built with is undefined behaviour at run time.
# trainlab_check_nccl() reads NCCL_MAJOR/MINOR/PATCH from the found nccl.h, works out LibTorch's NCCL
# version where it can, and stops the configuration on a mismatch.
#
# LibTorch's NCCL version, first found wins:
#   1. TRAINLAB_EXPECTED_NCCL_VERSION (cache variable: X.Y.Z, or X.Y to compare major.minor only);
#   2. a PyTorch wheel's pin, "Requires-Dist: nvidia-nccl-cuNN==X.Y.Z" in site-packages/torch-*.dist-info/METADATA;
#   3. the installed wheel, site-packages/nvidia_nccl_cuNN-X.Y.Z.dist-info;
#   4. libnccl.so.X.Y.Z in LibTorch's lib/ or the wheel's nvidia/nccl/lib;
#   5. the "NCCL version X.Y.Z" string inside a libnccl.so* there.
# Unknown (Debian's libtorch-cuda, which takes the system libnccl2): the header's version is printed
# and nothing is compared. TRAINLAB_NCCL_VERSION_CHECK=OFF turns a mismatch into a warning.
#
# Usable in script mode too (cmake -P), which is how scripts/check-gpu-script.sh tests it.

# Sets <out> to "X.Y.Z" from <include_dir>/nccl.h, or "" when it has no version macros.
function(trainlab_nccl_header_version include_dir out)
  set(version "")
  if(EXISTS "${include_dir}/nccl.h")
    file(STRINGS "${include_dir}/nccl.h" lines REGEX "^#define NCCL_(MAJOR|MINOR|PATCH)[ \t]+[0-9]+")
    foreach(part MAJOR MINOR PATCH)
      set(value_${part} "")
      foreach(line IN LISTS lines)
        if(line MATCHES "^#define NCCL_${part}[ \t]+([0-9]+)")
          set(value_${part} "${CMAKE_MATCH_1}")
        endif()
      endforeach()
    endforeach()
    if(NOT value_MAJOR STREQUAL "" AND NOT value_MINOR STREQUAL "" AND NOT value_PATCH STREQUAL "")
      set(version "${value_MAJOR}.${value_MINOR}.${value_PATCH}")
    endif()
  endif()
  set(${out} "${version}" PARENT_SCOPE)
endfunction()

# Sets <out_version> to LibTorch's NCCL "X.Y.Z" (or "") and <out_source> to where it was read.
# <torch_prefix> is TorchConfig's TORCH_INSTALL_PREFIX (site-packages/torch for a wheel).
function(trainlab_libtorch_nccl_version torch_prefix out_version out_source)
  set(version "")
  set(source "")
  get_filename_component(site "${torch_prefix}/.." ABSOLUTE)
  # 2. the wheel's pin
  file(GLOB metadata LIST_DIRECTORIES false "${site}/torch-*.dist-info/METADATA")
  foreach(file IN LISTS metadata)
    if(version STREQUAL "")
      file(STRINGS "${file}" pins REGEX "^Requires-Dist: nvidia-nccl-cu[0-9]+")
      foreach(pin IN LISTS pins)
        if(version STREQUAL "" AND pin MATCHES "==[ \t]*([0-9]+\\.[0-9]+\\.[0-9]+)")
          set(version "${CMAKE_MATCH_1}")
          set(source "${file} (${pin})")
        endif()
      endforeach()
    endif()
  endforeach()
  # 3. the installed nvidia-nccl wheel
  if(version STREQUAL "")
    file(GLOB infos LIST_DIRECTORIES true "${site}/nvidia_nccl_cu*-*.dist-info")
    foreach(info IN LISTS infos)
      get_filename_component(name "${info}" NAME)
      if(version STREQUAL "" AND name MATCHES "^nvidia_nccl_cu[0-9]+-([0-9]+\\.[0-9]+\\.[0-9]+)")
        set(version "${CMAKE_MATCH_1}")
        set(source "${info}")
      endif()
    endforeach()
  endif()
  # 4. and 5. the library next to LibTorch or in the wheel
  if(version STREQUAL "")
    file(GLOB libraries LIST_DIRECTORIES false "${torch_prefix}/lib/libnccl.so*" "${site}/nvidia/nccl/lib/libnccl.so*")
    foreach(library IN LISTS libraries)
      get_filename_component(name "${library}" NAME)
      if(version STREQUAL "" AND name MATCHES "^libnccl\\.so\\.([0-9]+\\.[0-9]+\\.[0-9]+)$")
        set(version "${CMAKE_MATCH_1}")
        set(source "${library}")
      endif()
    endforeach()
    foreach(library IN LISTS libraries)
      if(version STREQUAL "" AND NOT IS_SYMLINK "${library}")
        file(STRINGS "${library}" found REGEX "NCCL version [0-9]+\\.[0-9]+\\.[0-9]+" LIMIT_COUNT 1)
        if(found MATCHES "NCCL version ([0-9]+\\.[0-9]+\\.[0-9]+)")
          set(version "${CMAKE_MATCH_1}")
          set(source "the \"NCCL version\" string in ${library}")
        endif()
      endif()
    endforeach()
  endif()
  set(${out_version} "${version}" PARENT_SCOPE)
  set(${out_source} "${source}" PARENT_SCOPE)
endfunction()

# The check itself. <expected> is TRAINLAB_EXPECTED_NCCL_VERSION's value (may be empty);
# <enforce> ON: a mismatch is a FATAL_ERROR, OFF: a warning. Sets TRAINLAB_NCCL_VERSION in the caller.
function(trainlab_check_nccl include_dir torch_prefix expected enforce)
  trainlab_nccl_header_version("${include_dir}" header)
  if(header STREQUAL "")
    message(FATAL_ERROR "TrainLab: ${include_dir}/nccl.h has no NCCL_MAJOR/NCCL_MINOR/NCCL_PATCH: "
                        "not NCCL's header? Point TRAINLAB_NCCL_INCLUDE_DIR at LibTorch's NCCL include folder")
  endif()
  set(TRAINLAB_NCCL_VERSION "${header}" PARENT_SCOPE)
  if(NOT expected STREQUAL "")
    if(NOT expected MATCHES "^[0-9]+\\.[0-9]+(\\.[0-9]+)?$")
      message(FATAL_ERROR "TrainLab: TRAINLAB_EXPECTED_NCCL_VERSION must be X.Y.Z or X.Y, got \"${expected}\"")
    endif()
    set(torch_version "${expected}")
    set(source "TRAINLAB_EXPECTED_NCCL_VERSION")
  else()
    trainlab_libtorch_nccl_version("${torch_prefix}" torch_version source)
  endif()
  if(torch_version STREQUAL "")
    message(STATUS "TrainLab: NCCL header ${header} (${include_dir}/nccl.h); LibTorch's NCCL version unknown, "
                   "not compared (set TRAINLAB_EXPECTED_NCCL_VERSION=X.Y.Z to compare)")
    return()
  endif()
  # X.Y compares major.minor only.
  set(compared "${header}")
  if(torch_version MATCHES "^[0-9]+\\.[0-9]+$")
    string(REGEX REPLACE "^([0-9]+\\.[0-9]+)\\..*" "\\1" compared "${header}")
  endif()
  if(compared VERSION_EQUAL torch_version)
    message(STATUS "TrainLab: NCCL header ${header} (${include_dir}/nccl.h) matches LibTorch's NCCL ${torch_version} (${source})")
    return()
  endif()
  string(CONCAT text "NCCL header/ABI mismatch: ${include_dir}/nccl.h is NCCL ${header}, LibTorch's NCCL is ${torch_version} "
           "(from ${source}). ProcessGroupNCCL's options are laid out by nccl.h, so this build would be undefined "
           "behaviour at run time. Point TRAINLAB_NCCL_INCLUDE_DIR at NCCL ${torch_version}'s include folder "
           "(a PyTorch wheel's site-packages/nvidia/nccl/include), or, if the detection is wrong, set "
           "TRAINLAB_EXPECTED_NCCL_VERSION, or TRAINLAB_NCCL_VERSION_CHECK=OFF to only warn.")
  if(enforce)
    message(FATAL_ERROR "TrainLab: ${text}")
  else()
    message(WARNING "TrainLab: ${text}")
  endif()
endfunction()
