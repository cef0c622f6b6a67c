# Layering rules, checked at configure time so a violation cannot build:
# the controller's core decides and must not depend on gRPC or SQLite
# (docs/architecture.md "Layers"); modelkit is shared by agent, controller
# and dcuctl and must depend on neither either.
function(_dcu_collect_links target out)
  set(seen "${${out}}")
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(ilibs ${target} INTERFACE_LINK_LIBRARIES)
  foreach(lib IN LISTS libs ilibs)
    if(NOT lib OR lib MATCHES "-NOTFOUND$" OR lib MATCHES "^\\$<")
      continue()
    endif()
    if(lib IN_LIST seen)
      continue()
    endif()
    list(APPEND seen ${lib})
    if(TARGET ${lib})
      get_target_property(aliased ${lib} ALIASED_TARGET)
      if(aliased)
        set(lib ${aliased})
      endif()
      get_target_property(type ${lib} TYPE)
      set(${out} "${seen}")
      _dcu_collect_links(${lib} ${out})
      set(seen "${${out}}")
    endif()
  endforeach()
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# Fails configuration when `target` links (directly or transitively) a
# library whose name matches `pattern`.
function(dcu_forbid_links target pattern why)
  set(links "")
  _dcu_collect_links(${target} links)
  foreach(lib IN LISTS links)
    if(lib MATCHES "${pattern}")
      message(FATAL_ERROR "layering: ${target} links ${lib} (${why})")
    endif()
  endforeach()
endfunction()

dcu_forbid_links(dcu_controller_core "gRPC::|grpc|SQLite::|sqlite|dcu_proto_grpc|dcu_store|dcu_sqlite|dcu_pg_store|LIBPQ"
  "controller/core decides; gRPC, SQLite and libpq live in controller/service and controller/store")
dcu_forbid_links(dcu_modelkit "gRPC::|grpc|SQLite::|sqlite|dcu_proto_grpc|dcu_controller"
  "modelkit is the shared lower wing: no gRPC, SQLite or controller code")
dcu_forbid_links(dcu_diagnosis "gRPC::|grpc|SQLite::|sqlite|dcu_proto_grpc|dcu_controller"
  "modelkit is the shared lower wing: no gRPC, SQLite or controller code")
