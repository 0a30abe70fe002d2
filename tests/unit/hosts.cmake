# Unit tests of the hosts area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
