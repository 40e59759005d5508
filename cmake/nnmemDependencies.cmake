# nnmemDependencies.cmake - finds the two libraries libnnmem links privately
# and names them nnmem::cjson and nnmem::protobuf_c (INTERFACE IMPORTED
# targets). Used by nnmem's own build and by the installed nnmemConfig.cmake,
# so a project that links the static nnmem::nnmem through find_package needs
# neither pkg-config nor a find module of its own.
#
# Order of search, first hit wins:
#   cJSON:      its own CMake package (Debian's libcjson-dev ships
#               cmake/cJSON/cJSONConfig.cmake, target `cjson`), then
#               find_path/find_library, then pkg-config (libcjson) when the
#               PkgConfig module and the pkg-config program are present;
#   protobuf-c: find_path/find_library (Debian ships no CMake package), then
#               pkg-config (libprotobuf-c).
# Sets NNMEM_CJSON_FOUND and NNMEM_PROTOBUFC_FOUND. A library that is not
# found still gets its target, linking the bare name (cjson, protobuf-c), so
# only the static library's final link fails ("cannot find -lcjson"); the
# caller decides whether a missing library is fatal. Running it twice is
# harmless.

# --- cJSON -------------------------------------------------------------------
if(NOT TARGET nnmem::cjson)
  set(NNMEM_CJSON_FOUND FALSE)
  add_library(nnmem::cjson INTERFACE IMPORTED)
  find_package(cJSON CONFIG QUIET)
  if(TARGET cjson)
    set_property(TARGET nnmem::cjson PROPERTY INTERFACE_LINK_LIBRARIES cjson)
    set(NNMEM_CJSON_FOUND TRUE)
  else()
    find_path(NNMEM_CJSON_INCLUDE_DIR cjson/cJSON.h)
    find_library(NNMEM_CJSON_LIBRARY NAMES cjson)
    if(NNMEM_CJSON_INCLUDE_DIR AND NNMEM_CJSON_LIBRARY)
      set_target_properties(nnmem::cjson PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${NNMEM_CJSON_INCLUDE_DIR}"
        INTERFACE_LINK_LIBRARIES "${NNMEM_CJSON_LIBRARY}")
      set(NNMEM_CJSON_FOUND TRUE)
    else()
      find_package(PkgConfig QUIET)
      if(PKG_CONFIG_FOUND)
        pkg_check_modules(NNMEM_PC_CJSON QUIET IMPORTED_TARGET libcjson)
      endif()
      if(TARGET PkgConfig::NNMEM_PC_CJSON)
        set_property(TARGET nnmem::cjson
          PROPERTY INTERFACE_LINK_LIBRARIES PkgConfig::NNMEM_PC_CJSON)
        set(NNMEM_CJSON_FOUND TRUE)
      else()
        set_property(TARGET nnmem::cjson PROPERTY INTERFACE_LINK_LIBRARIES cjson)
      endif()
    endif()
  endif()
endif()

# --- protobuf-c --------------------------------------------------------------
if(NOT TARGET nnmem::protobuf_c)
  set(NNMEM_PROTOBUFC_FOUND FALSE)
  add_library(nnmem::protobuf_c INTERFACE IMPORTED)
  find_path(NNMEM_PROTOBUFC_INCLUDE_DIR protobuf-c/protobuf-c.h)
  find_library(NNMEM_PROTOBUFC_LIBRARY NAMES protobuf-c)
  if(NNMEM_PROTOBUFC_INCLUDE_DIR AND NNMEM_PROTOBUFC_LIBRARY)
    set_target_properties(nnmem::protobuf_c PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${NNMEM_PROTOBUFC_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${NNMEM_PROTOBUFC_LIBRARY}")
    set(NNMEM_PROTOBUFC_FOUND TRUE)
  else()
    find_package(PkgConfig QUIET)
    if(PKG_CONFIG_FOUND)
      pkg_check_modules(NNMEM_PC_PROTOBUFC QUIET IMPORTED_TARGET libprotobuf-c)
    endif()
    if(TARGET PkgConfig::NNMEM_PC_PROTOBUFC)
      set_property(TARGET nnmem::protobuf_c
        PROPERTY INTERFACE_LINK_LIBRARIES PkgConfig::NNMEM_PC_PROTOBUFC)
      set(NNMEM_PROTOBUFC_FOUND TRUE)
    else()
      set_property(TARGET nnmem::protobuf_c
        PROPERTY INTERFACE_LINK_LIBRARIES protobuf-c)
    endif()
  endif()
endif()
