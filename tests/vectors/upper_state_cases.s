.text
.hidden scalar
.type scalar, @function
scalar:
 xor %eax, %eax
 ret
.globl clean_return
.type clean_return, @function
clean_return:
 vpxor %ymm0, %ymm0, %ymm0
 vzeroupper
 ret
.globl dirty_return
.type dirty_return, @function
dirty_return:
 vpxor %ymm0, %ymm0, %ymm0
 ret
.globl zmm_return
.type zmm_return, @function
zmm_return:
 vpxord %zmm1, %zmm1, %zmm1
 ret
.globl xmm_only
.type xmm_only, @function
xmm_only:
 vpxor %xmm0, %xmm0, %xmm0
 ret
.globl dirty_tail_call
.type dirty_tail_call, @function
dirty_tail_call:
 vpcmpeqb %ymm1, %ymm1, %ymm1
 jmp scalar
.globl dirty_call
.type dirty_call, @function
dirty_call:
 vpxor %ymm0, %ymm0, %ymm0
 call scalar
 vzeroupper
 ret
.globl early_tail_call
.type early_tail_call, @function
early_tail_call:
 test %rdi, %rdi
 jne 1f
 jmp scalar
1: vpxor %ymm0, %ymm0, %ymm0
 vzeroupper
 jmp scalar
.globl dirty_on_one_branch
.type dirty_on_one_branch, @function
dirty_on_one_branch:
 test %rdi, %rdi
 je 1f
 vpxor %ymm0, %ymm0, %ymm0
1: ret
.globl clean_on_both_branches
.type clean_on_both_branches, @function
clean_on_both_branches:
 test %rdi, %rdi
 je 1f
 vpxor %ymm0, %ymm0, %ymm0
 vzeroupper
1: ret
.globl cleaned_by_vzeroall
.type cleaned_by_vzeroall, @function
cleaned_by_vzeroall:
 vpxor %ymm0, %ymm0, %ymm0
 vzeroall
 ret
.globl dirty_in_a_loop
.type dirty_in_a_loop, @function
dirty_in_a_loop:
 1: vpxor %ymm0, %ymm0, %ymm0
 dec %rdi
 jne 1b
 ret
.globl indirect_jump
.type indirect_jump, @function
indirect_jump:
 vpxor %ymm0, %ymm0, %ymm0
 vzeroupper
 jmp *%rdi
.globl split
.type split, @function
split:
 vpxor %ymm0, %ymm0, %ymm0
 jmp split.cold
.type split.cold, @function
split.cold:
 vzeroupper
 ret
