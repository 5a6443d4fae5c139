/* An empty shared library: lets the `tlbpack run` tests check the environment it sets without
 * needing the allocator. */
int tp_fake_preload_marker(void) { return 42; }
