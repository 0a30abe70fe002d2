# Unit tests of the core area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
