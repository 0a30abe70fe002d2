# Unit tests of the pmix area (see tests/CMakeLists.txt for tlaunch_add_unit_test).
