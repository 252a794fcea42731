/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The program `make demo` runs under gdb: a linked list whose nodes come
 * from a small allocation helper inlined into its caller at -O2. */
#include <stdio.h>
#include <stdlib.h>

struct node {
    struct node *next;
    char payload[84];
};

void inspect(struct node *list);

__attribute__((noinline)) static struct node *make_node(void)
{
    struct node *n = malloc(sizeof *n);
    if (!n)
        abort();
    n->next = NULL;
    return n;
}

static inline struct node *list_push(struct node *head)
{
    struct node *n = make_node();
    n->next = head;
    return n;
}

__attribute__((noinline)) static struct node *list_build(int count)
{
    struct node *head = NULL;
    for (int i = 0; i < count; i++)
        head = list_push(head);
    return head;
}

__attribute__((noinline)) void inspect(struct node *list)
{
    __asm__ volatile("" : : "r"(list) : "memory");
}

int main(void)
{
    struct node *list = list_build(5);
    inspect(list);
    int n = 0;
    while (list) {
        struct node *next = list->next;
        free(list);
        list = next;
        n++;
    }
    printf("demo: freed %d nodes\n", n);
    return 0;
}
