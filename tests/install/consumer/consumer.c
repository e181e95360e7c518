/* An external program using an installed libmemkit. Prints "ok". */
#include <memkit/memkit.h>

#include <stdio.h>
#include <string.h>

int main(void)
{
    mk_pool_t *pool = mk_pool_create(&(mk_pool_config_t){.item_size = 32});
    int *item = mk_pool_alloc(pool);
    int ok;

    {
        MK_SCOPE();
        char *s = mk_t_fmt("%s-%d", mk_version(), 7);

        ok = item != NULL && strstr(s, "-7") != NULL;
    }
    mk_pool_free(pool, item);
    mk_pool_destroy(pool);
    puts(ok ? "ok" : "FAILED");
    return !ok;
}
