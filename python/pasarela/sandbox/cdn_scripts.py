"""The scripts of the sandbox's CDN stand-ins (:mod:`.cdn`), as the service's public JavaScript SDK documents
their browser API, talking to the sandbox that served them (the address they were loaded from).

- ``kushki.min.js``: ``new Kushki({merchantId, inTestEnvironment})`` and
  ``kushki.requestTransferToken(body, callback)``, which POSTs ``body`` to ``/transfer/v1/tokens`` with the
  public key and calls ``callback({token})``, or on failure ``callback({code, error, message})`` (spec 2.5 and
  section 7's client-side token failures); ``requestBankList(callback)`` gives the PSE banks.
- ``kushki-checkout.js``: ``new KushkiCheckout(config)``, the hosted checkout, v1 (``merchant_id``,
  ``currency``, ``callback_url``) or v2 (``kformId``, ``publicMerchantId``). It draws the payer's fields inside
  the merchant's ``<form id=config.form>``, disables its pay button on the first click, asks for the transfer
  token, and posts the form to the merchant's action with ``kushkiToken`` and ``kushkiPaymentMethod``
  (``transfer``) added, as the service's checkouts do. A v2 form is configured in the service's console,
  which the sandbox does not have: the payer chooses the country, and the callbackUrl is the checkout page.

Everything is built with DOM calls (``textContent``, never ``innerHTML``): an error message from the sandbox is
shown as text, in the form's words (the field's label, not its wire name; the code only in ``data-code``).
"""

from __future__ import annotations

__all__ = ["CHECKOUT", "LIBRARY"]

_CLIENT = """\
  function sandboxBase() {
    var script = document.currentScript;
    var source = script ? script.src : "";
    var at = source.lastIndexOf("/cdn/");
    return at < 0 ? "" : source.slice(0, at);
  }
  function failure(code, error, message) {
    return {code: code, error: error, message: message};
  }
  function requestTransferToken(base, merchantId, body, callback) {
    fetch(base + "/transfer/v1/tokens", {
      method: "POST",
      headers: {"Content-Type": "application/json", "Public-Merchant-Id": merchantId},
      body: JSON.stringify(body)
    }).then(function (answer) {
      return answer.json().then(function (value) { return {ok: answer.ok, status: answer.status, value: value}; });
    }).then(function (result) {
      if (result.ok && typeof result.value.token === "string") {
        callback({token: result.value.token});
      } else {
        var value = result.value || {};
        callback(failure(String(value.code || "HTTP_" + result.status),
                         value.field ? "invalid " + value.field : "the token request was refused",
                         String(value.message || "HTTP " + result.status)));
      }
    }, function (reason) {
      callback(failure("NETWORK_ERROR", "the service could not be reached", String(reason)));
    });
  }
"""

LIBRARY = """\
/* pasarela sandbox: a stand-in for the service's client library (kushki.min.js), talking to this sandbox. */
(function () {
  "use strict";
""" + _CLIENT + """\
  var base = sandboxBase();
  function Kushki(options) {
    if (!options || typeof options.merchantId !== "string" || !options.merchantId) {
      throw new Error("Kushki: merchantId (the public merchant id) is required");
    }
    this.merchantId = options.merchantId;
    this.inTestEnvironment = Boolean(options.inTestEnvironment);
  }
  Kushki.prototype.requestTransferToken = function (body, callback) {
    requestTransferToken(base, this.merchantId, body, callback);
  };
  Kushki.prototype.requestBankList = function (callback) {
    fetch(base + "/transfer/v1/bankList", {headers: {"Public-Merchant-Id": this.merchantId}})
      .then(function (answer) { return answer.json(); })
      .then(callback, function (reason) {
        callback(failure("NETWORK_ERROR", "the service could not be reached", String(reason)));
      });
  };
  window.Kushki = Kushki;
}());
"""

CHECKOUT = """\
/* pasarela sandbox: a stand-in for the service's hosted checkout (kushki-checkout.js), v1 and v2. */
(function () {
  "use strict";
""" + _CLIENT + """\
  var base = sandboxBase();
  var COUNTRIES = {
    USD: {label: "Ecuador (USD)", documents: ["CI", "RUC", "PAS"]},
    MXN: {label: "Mexico (MXN)", documents: ["CURP"]},
    COP: {label: "Colombia PSE (COP)", documents: ["CC", "NIT", "CE", "TI", "PP"]}
  };
  function element(tag, attributes, text) {
    var made = document.createElement(tag);
    Object.keys(attributes || {}).forEach(function (name) { made.setAttribute(name, attributes[name]); });
    if (text) { made.textContent = text; }
    return made;
  }
  function labelled(label, field) {
    var wrapper = element("label", {"class": "kushki-sandbox-field"}, label + " ");
    wrapper.appendChild(field);
    return wrapper;
  }
  function select(name, values, labels) {
    var made = element("select", {name: name});
    values.forEach(function (value, index) {
      made.appendChild(element("option", {value: value}, labels ? labels[index] : value));
    });
    return made;
  }
  function hidden(form, name, value) {
    var field = element("input", {type: "hidden", name: name});
    field.value = value;
    form.appendChild(field);
  }
  var LABELS = {documentNumber: "Document number", documentType: "Document type", email: "E-mail", bankId: "Bank"};
  function inWords(message) {
    /* "documentNumber: must not be blank" as the form says it: "Document number: must not be blank" */
    var found = /^([A-Za-z]+): (.*)$/.exec(message);
    return found && LABELS[found[1]] ? LABELS[found[1]] + ": " + found[2] : message;
  }
  function KushkiCheckout(config) {
    if (!config || typeof config.form !== "string") { throw new Error("KushkiCheckout: form is required"); }
    var form = document.getElementById(config.form);
    if (!form) { throw new Error("KushkiCheckout: no form with id " + config.form); }
    var version = config.kformId ? 2 : 1;
    var merchantId = version === 2 ? config.publicMerchantId : config.merchant_id;
    var box = element("fieldset", {"class": "kushki-sandbox-checkout", "data-version": String(version)});
    box.appendChild(element("legend", {}, version === 2 ? "Kajita " + config.kformId + " (sandbox)"
                                                         : "Cajita (sandbox)"));
    var currency = version === 1 ? config.currency : null;
    var country = select("kushki-country", Object.keys(COUNTRIES),
                         Object.keys(COUNTRIES).map(function (code) { return COUNTRIES[code].label; }));
    if (version === 2) { box.appendChild(labelled("Country", country)); }
    var documentType = select("kushki-document-type", COUNTRIES[currency || "USD"].documents);
    var documentNumber = element("input", {name: "kushki-document-number", required: "required"});
    var email = element("input", {name: "kushki-email", type: "email", required: "required"});
    var bank = select("kushki-bank", []);
    var bankField = labelled("Bank", bank);
    box.appendChild(labelled("Document type", documentType));
    box.appendChild(labelled("Document number", documentNumber));
    box.appendChild(labelled("E-mail", email));
    box.appendChild(bankField);
    var problem = element("p", {"class": "kushki-sandbox-error", role: "alert"});
    var pay = element("button", {type: "submit"}, "Pay by transfer");
    box.appendChild(problem);
    box.appendChild(pay);
    form.appendChild(box);
    function chosen() { return currency || country.value; }
    function refresh() {
      var documents = COUNTRIES[chosen()] ? COUNTRIES[chosen()].documents : ["CI"];
      while (documentType.firstChild) { documentType.removeChild(documentType.firstChild); }
      documents.forEach(function (value) { documentType.appendChild(element("option", {value: value}, value)); });
      bankField.hidden = chosen() !== "COP";
    }
    country.addEventListener("change", refresh);
    refresh();
    fetch(base + "/transfer/v1/bankList", {headers: {"Public-Merchant-Id": merchantId}})
      .then(function (answer) { return answer.ok ? answer.json() : []; })
      .then(function (banks) {
        banks.forEach(function (item) { bank.appendChild(element("option", {value: item.code}, item.name)); });
      }, function () { return null; });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      pay.disabled = true;  /* one click, one token */
      problem.textContent = "";
      var amount = {};
      Object.keys(config.amount || {}).forEach(function (name) { amount[name] = config.amount[name]; });
      if (chosen() !== "USD") { delete amount.ice; }
      var body = {
        currency: chosen(), amount: amount, userType: "0", documentType: documentType.value,
        documentNumber: documentNumber.value, email: email.value,
        paymentDescription: "Payment at " + window.location.host,
        callbackUrl: config.callback_url || window.location.href.split("#")[0]
      };
      if (chosen() === "COP") { body.bankId = bank.value; }
      requestTransferToken(base, merchantId, body, function (result) {
        if (result.token) {
          hidden(form, "kushkiToken", result.token);
          hidden(form, "kushkiPaymentMethod", "transfer");
          form.submit();
        } else {
          problem.textContent = inWords(result.message);
          problem.setAttribute("data-code", result.code);  /* for the developer: the payer reads words */
          pay.disabled = false;
        }
      });
    });
  }
  window.KushkiCheckout = KushkiCheckout;
}());
"""
