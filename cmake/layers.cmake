# The module layering as the build declares it, written once every target exists, for the
# layering check (check_layers.cmake, the ctest test `layering`).
#
# A module is a folder whose CMakeLists.txt defines targets (base, registry, runtime,
# runtime/worker, tuner/loop, ...); a file belongs to the module of the deepest such folder
# above it, so runtime/cuda/ is part of runtime while runtime/worker/ is a module of its own.
# What a module may include: its own headers and those of every module its targets link
# (PUBLIC or PRIVATE), and what those export in turn (PUBLIC, INTERFACE). The includes are
# all written from the repository root and one include path serves every target, so the
# compiler would accept a header of any module; this is what makes the declared
# dependencies the ones the code can use.

# The folders under `dir` (itself included) that define targets, each with its targets.
function(_tilesmith_module_dirs dir out_dirs)
  set(found "")
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  if(targets)
    list(APPEND found "${dir}")
  endif()
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    # The tests link whatever they test; they are not a layer.
    if(sub STREQUAL "${PROJECT_SOURCE_DIR}/tests")
      continue()
    endif()
    _tilesmith_module_dirs("${sub}" sub_found)
    list(APPEND found ${sub_found})
  endforeach()
  set(${out_dirs} "${found}" PARENT_SCOPE)
endfunction()

# Writes `out`: TS_LAYER_MODULES (module folders relative to the source root) and, per
# module M (as a C identifier), TS_LAYER_<M>_ALLOWED (modules it may include),
# TS_LAYER_<M>_DIRECT (the modules its targets link directly) and TS_LAYER_<M>_SOURCES
# (the sources its targets compile, absolute).
function(tilesmith_write_layers out)
  _tilesmith_module_dirs("${PROJECT_SOURCE_DIR}" dirs)
  set(modules "")
  foreach(dir IN LISTS dirs)
    file(RELATIVE_PATH rel "${PROJECT_SOURCE_DIR}" "${dir}")
    if(rel STREQUAL "")
      continue()  # the top level defines only the warnings target
    endif()
    list(APPEND modules "${rel}")
    get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t IN LISTS targets)
      set(_module_of_${t} "${rel}")
    endforeach()
  endforeach()

  set(text "# Written by cmake/layers.cmake at configure time.\nset(TS_LAYER_MODULES \"${modules}\")\n")
  foreach(rel IN LISTS modules)
    get_property(targets DIRECTORY "${PROJECT_SOURCE_DIR}/${rel}" PROPERTY BUILDSYSTEM_TARGETS)
    # Direct links of the module's targets, then what each linked target exports.
    set(queue "")
    set(sources "")
    foreach(t IN LISTS targets)
      get_target_property(type ${t} TYPE)
      if(NOT type STREQUAL "INTERFACE_LIBRARY")
        get_target_property(links ${t} LINK_LIBRARIES)
        if(links)
          list(APPEND queue ${links})
        endif()
        get_target_property(srcs ${t} SOURCES)
        foreach(s IN LISTS srcs)
          if(NOT IS_ABSOLUTE "${s}")
            set(s "${PROJECT_SOURCE_DIR}/${rel}/${s}")
          endif()
          list(APPEND sources "${s}")
        endforeach()
      endif()
    endforeach()
    # The modules the targets link directly: the edges docs/architecture.md draws.
    set(direct "")
    foreach(t IN LISTS queue)
      if(NOT t MATCHES "^\\$<" AND TARGET "${t}" AND DEFINED _module_of_${t})
        list(APPEND direct "${_module_of_${t}}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES direct)
    list(REMOVE_ITEM direct "${rel}")
    list(SORT direct)
    set(seen "")
    set(allowed "")
    while(queue)
      list(POP_FRONT queue t)
      # Generator expressions ($<LINK_ONLY:...> marks a static library's PRIVATE links in
      # its interface) and plain flags are no module.
      if(t MATCHES "^\\$<" OR NOT TARGET "${t}" OR t IN_LIST seen)
        continue()
      endif()
      list(APPEND seen "${t}")
      if(DEFINED _module_of_${t})
        list(APPEND allowed "${_module_of_${t}}")
      endif()
      get_target_property(exported ${t} INTERFACE_LINK_LIBRARIES)
      if(exported)
        list(APPEND queue ${exported})
      endif()
    endwhile()
    list(REMOVE_DUPLICATES allowed)
    list(REMOVE_ITEM allowed "${rel}")
    list(SORT allowed)
    string(MAKE_C_IDENTIFIER "${rel}" id)
    string(APPEND text "set(TS_LAYER_${id}_ALLOWED \"${allowed}\")\nset(TS_LAYER_${id}_DIRECT \"${direct}\")\n"
                       "set(TS_LAYER_${id}_SOURCES \"${sources}\")\n")
  endforeach()
  file(WRITE "${out}" "${text}")
endfunction()
