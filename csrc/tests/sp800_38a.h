/* NIST SP 800-38A F.2.5 / F.2.6, CBC-AES256: four whole blocks (test_aes.c, test_aes_many.c). */
#ifndef PASARELA_TEST_SP800_38A_H
#define PASARELA_TEST_SP800_38A_H

static const char *sp_key = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
static const char *sp_iv = "000102030405060708090a0b0c0d0e0f";
static const char *sp_pt = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51"
                           "30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
static const char *sp_ct = "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d"
                           "39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b";

#endif
