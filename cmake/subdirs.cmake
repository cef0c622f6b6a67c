# dcu_add_all_subdirectories(): add every immediate subdirectory that has a
# CMakeLists.txt, in sorted order. Lets modules be added without editing the
# parent (targets may link to targets defined in later directories).
macro(dcu_add_all_subdirectories)
  file(GLOB _dcu_children RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _dcu_children)
  foreach(_dcu_child ${_dcu_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${_dcu_child}
       AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${_dcu_child}/CMakeLists.txt)
      add_subdirectory(${_dcu_child})
    endif()
  endforeach()
endmacro()
