# The layering check (ctest test `layering`): every #include "a/b.h" of a module's files
# names a header of the module itself or of a module it declares as a dependency in
# CMake (layers.cmake wrote what each module may include). Run as
#   cmake -DLAYERS=<build>/layers.cmake -DSOURCE_DIR=<repo> [-DDOC=<repo>/docs/architecture.md]
#         -P cmake/check_layers.cmake
# A module's files: the sources its targets compile and every header in its folder (not in
# a deeper module's). With DOC, also that the module table there names every module each
# module links. Fails listing each offending line.

cmake_minimum_required(VERSION 3.25)

if(NOT LAYERS OR NOT SOURCE_DIR)
  message(FATAL_ERROR "give -DLAYERS=<file written by layers.cmake> -DSOURCE_DIR=<repository root>")
endif()
include("${LAYERS}")

# The module a path relative to the root belongs to: the deepest module folder above it.
function(_module_of path out)
  set(best "")
  foreach(m IN LISTS TS_LAYER_MODULES)
    string(LENGTH "${m}" n)
    string(LENGTH "${best}" nb)
    if(path MATCHES "^${m}/" AND n GREATER nb)
      set(best "${m}")
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# Top-level folders that hold modules: an include under one of them that no module owns
# is a header outside every library, reported too.
set(roots "")
foreach(m IN LISTS TS_LAYER_MODULES)
  string(REGEX REPLACE "/.*" "" root "${m}")
  list(APPEND roots "${root}")
endforeach()
list(REMOVE_DUPLICATES roots)

set(errors 0)
set(checked 0)
foreach(m IN LISTS TS_LAYER_MODULES)
  string(MAKE_C_IDENTIFIER "${m}" id)
  set(allowed "${TS_LAYER_${id}_ALLOWED}")
  file(GLOB_RECURSE headers "${SOURCE_DIR}/${m}/*.h")
  set(files "")
  foreach(f IN LISTS TS_LAYER_${id}_SOURCES headers)
    # Generated sources (the embedded kernels) live in the build folder.
    if(NOT EXISTS "${f}" OR NOT f MATCHES "^${SOURCE_DIR}/")
      continue()
    endif()
    file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
    _module_of("${rel}" owner)
    if(owner STREQUAL m)
      list(APPEND files "${rel}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES files)
  foreach(rel IN LISTS files)
    math(EXPR checked "${checked} + 1")
    file(STRINGS "${SOURCE_DIR}/${rel}" lines ENCODING UTF-8 REGEX "^[ \t]*#[ \t]*include[ \t]*\"[^\"]+\"")
    foreach(line IN LISTS lines)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" header "${line}")
      string(REGEX REPLACE "/.*" "" root "${header}")
      if(NOT header MATCHES "/" OR NOT root IN_LIST roots)
        continue()  # a header beside the file, or a third party's
      endif()
      _module_of("${header}" target)
      if(target STREQUAL "")
        message(SEND_ERROR "${rel}: includes ${header}, which belongs to no module")
        math(EXPR errors "${errors} + 1")
      elseif(NOT target STREQUAL m AND NOT target IN_LIST allowed)
        message(SEND_ERROR "${rel}: includes ${header} of module ${target}, which ${m} does not declare as a "
                           "dependency (it may include: ${allowed})")
        math(EXPR errors "${errors} + 1")
      endif()
    endforeach()
  endforeach()
endforeach()

# docs/architecture.md draws every edge the build declares: its module table's row of each
# module names every module that module's targets link, in the second column.
if(DOC)
  file(STRINGS "${DOC}" doc_rows ENCODING UTF-8 REGEX "^\\| `[a-z_/]+` \\|")
  foreach(m IN LISTS TS_LAYER_MODULES)
    string(MAKE_C_IDENTIFIER "${m}" id)
    set(uses "")
    set(found FALSE)
    foreach(row IN LISTS doc_rows)
      if(row MATCHES "^\\| `${m}` \\|([^|]*)\\|")
        set(uses "${CMAKE_MATCH_1}")
        set(found TRUE)
      endif()
    endforeach()
    if(NOT found)
      message(SEND_ERROR "${DOC}: the module table has no row for ${m}")
      math(EXPR errors "${errors} + 1")
      continue()
    endif()
    foreach(dep IN LISTS TS_LAYER_${id}_DIRECT)
      string(FIND "${uses}" "`${dep}`" at)
      if(at LESS 0)
        message(SEND_ERROR "${DOC}: ${m} links ${dep}, which its row's uses column does not name")
        math(EXPR errors "${errors} + 1")
      endif()
    endforeach()
  endforeach()
endif()

list(LENGTH TS_LAYER_MODULES count)
if(errors GREATER 0)
  message(FATAL_ERROR "layering: ${errors} include(s) outside the declared dependencies or edges missing from the map")
endif()
set(drawn "")
if(DOC)
  set(drawn "; ${DOC} draws every declared edge")
endif()
message(STATUS "layering: ${checked} files of ${count} modules include only what their modules declare${drawn}")
