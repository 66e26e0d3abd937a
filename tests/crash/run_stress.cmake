# Runs storage_stress in a fresh temporary directory and removes it afterwards.
# Variables: STRESS (the program), SYNC (every|periodic), SECONDS.
string(RANDOM LENGTH 8 suffix)
set(dir "/tmp/shoal-stress-${SYNC}-${suffix}")
execute_process(COMMAND ${STRESS} --dir=${dir} --sync=${SYNC} --seconds=${SECONDS}
                RESULT_VARIABLE result)
file(REMOVE_RECURSE ${dir})
if(NOT result EQUAL 0)
  message(FATAL_ERROR "storage_stress failed (${result}); rerun with the seed it printed")
endif()
